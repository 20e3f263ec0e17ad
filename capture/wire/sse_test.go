package wire

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decoded is an event copied out of the decoder's buffers.
type decoded struct {
	Start, End int64
	Comment    bool
	Type, ID   string
	Data       string
}

func (e decoded) String() string {
	return fmt.Sprintf("{%d-%d c=%v type=%q id=%q data=%q}", e.Start, e.End, e.Comment, e.Type, e.ID, e.Data)
}

// decodeSplit feeds b to a decoder in pieces cut at the given offsets and returns the events.
func decodeSplit(b []byte, cuts []int) ([]decoded, error) {
	var d decoder
	var ev event
	var out []decoded
	prev := 0
	collect := func() {
		for d.Next(&ev) {
			out = append(out, decoded{ev.Start, ev.End, ev.Comment, string(ev.Type), string(ev.ID), string(ev.Data)})
		}
	}
	for _, c := range cuts {
		if c < prev || c > len(b) {
			continue
		}
		d.Feed(b[prev:c])
		collect()
		prev = c
	}
	d.Feed(b[prev:])
	collect()
	d.Finish()
	collect()
	if d.Offset() != int64(len(b)) {
		return out, fmt.Errorf("Offset() = %d; want %d", d.Offset(), len(b))
	}
	return out, d.Err()
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []decoded
	}{
		{"LF", "data: a\n\ndata: b\n\n", []decoded{{0, 9, false, "", "", "a"}, {9, 18, false, "", "", "b"}}},
		// With CRLF an event ends at the CR of its blank line; the LF counts with the next event.
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []decoded{{0, 10, false, "", "", "a"}, {10, 21, false, "", "", "b"}}},
		{"CR only", "data: a\r\rdata: b\r\r", []decoded{{0, 9, false, "", "", "a"}, {9, 18, false, "", "", "b"}}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []decoded{{0, 25, false, "", "", "a\nb\n c"}}},
		{"event and id", "event: delta\nid: 7\ndata: x\n\n", []decoded{{0, 28, false, "delta", "7", "x"}}},
		{"comment", ": ping\n\ndata: x\n\n", []decoded{{0, 7, true, "", "", "ping"}, {8, 17, false, "", "", "x"}}},
		{"missing final blank line", "data: a\n\ndata: [DONE]", []decoded{{0, 9, false, "", "", "a"}, {9, 21, false, "", "", "[DONE]"}}},
		{"missing final line end", "data: a\n", []decoded{{0, 8, false, "", "", "a"}}},
		{"blank lines and no data", "\n\nevent: x\n\nretry: 5\nfoo\n\n", nil},
		{"empty data field", "data\n\n", []decoded{{0, 6, false, "", "", ""}}},
		{"several tokens per chunk", "data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: {\"a\":3}\n\n", []decoded{{0, 15, false, "", "", `{"a":1}`}, {15, 30, false, "", "", `{"a":2}`}, {30, 45, false, "", "", `{"a":3}`}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []decoded{{0, 17, false, "", "", "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for cut := 0; cut <= len(tt.in); cut++ {
				got, err := decodeSplit([]byte(tt.in), []int{cut})
				if err != nil {
					t.Fatalf("decode(%q) split at %d: %v", tt.in, cut, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("decode(%q) split at %d = %v; want %v", tt.in, cut, got, tt.want)
				}
			}
		})
	}
}

func TestDecoderLineTooLong(t *testing.T) {
	in := "data: " + strings.Repeat("x", maxLine) + "\n\ndata: y\n\n"
	got, err := decodeSplit([]byte(in), []int{100, maxLine / 2})
	if err != errLineTooLong {
		t.Errorf("decode(long line) error = %v; want errLineTooLong", err)
	}
	if len(got) != 1 || got[0].Data != "y" {
		t.Errorf("decode(long line) = %v; want only the event y", got)
	}
}

// FuzzDecoder checks that the decoder never panics and that the same bytes split at arbitrary
// points decode to the same events, with offsets that stay inside the body and increase.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: a\r\n\r\n: c\r\nevent: e\r\nid: 1\r\ndata: b\r\ndata: c\r\n\r\n",
		"data: a\r\rdata: b",
		"\n\n\r\r\r\n:\n:x\ndata\n\ndata:\n\n",
	} {
		f.Add([]byte(s), uint16(3), uint16(17))
	}
	f.Fuzz(func(t *testing.T, b []byte, c1, c2 uint16) {
		whole, err1 := decodeSplit(b, nil)
		cuts := []int{int(c1) % (len(b) + 1), int(c2) % (len(b) + 1)}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		split, err2 := decodeSplit(b, cuts)
		if err1 != err2 || !reflect.DeepEqual(whole, split) {
			t.Fatalf("decode(%q) = %v, %v; split at %v = %v, %v", b, whole, err1, cuts, split, err2)
		}
		bytewise := make([]int, len(b))
		for i := range bytewise {
			bytewise[i] = i
		}
		one, err3 := decodeSplit(b, bytewise)
		if err1 != err3 || !reflect.DeepEqual(whole, one) {
			t.Fatalf("decode(%q) = %v; byte by byte = %v", b, whole, one)
		}
		var last int64
		for _, e := range whole {
			if e.Start < 0 || e.End < e.Start || e.End > int64(len(b)) || e.End < last {
				t.Fatalf("decode(%q): event %v out of order or outside the body", b, e)
			}
			last = e.End
		}
	})
}
