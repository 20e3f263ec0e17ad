package wire

import (
	"bytes"
	"errors"
)

// errLineTooLong is returned by decoder.Err when one SSE line exceeds maxLine bytes.
var errLineTooLong = errors.New("sse line too long")

// maxLine bounds one SSE line (and one event's data) so a broken server cannot make the decoder
// grow without limit.
const maxLine = 16 << 20

// event is one SSE event or comment line. Type, ID and Data alias the decoder's buffers and stay
// valid only until the next call to Next or Feed.
//
// Offsets count response-body bytes (after HTTP framing is removed) from 0. End is the offset
// just after the event's last byte: the terminator of the blank line that dispatched it, where a
// CRLF terminator ends at its CR (the event is complete when the CR arrives; the LF is counted
// with the next event). This keeps End the same however the body is split into reads.
type event struct {
	Start, End int64
	Comment    bool   // a comment line (":text"); Data holds the text after the colon, one leading space removed
	CR         bool   // the dispatching line ended with CR (a following LF is not part of End)
	Type       []byte // the event: field, empty when none
	ID         []byte // the id: field of this event, empty when none
	Data       []byte // data: lines joined by LF
}

// decoder is an incremental Server-Sent Events decoder (WHATWG HTML §9.2) over a response body.
// It accepts CRLF, LF and CR line ends, comments, multi-line data:, event:, id: and retry:
// fields, and (unlike the standard) dispatches a pending event at the end of the body when the
// final blank line is missing. It allocates nothing in steady state: its buffers are reused.
//
// Use: Feed(p), then call Next until it returns false; at the end of the body call Finish and
// Next again until it returns false.
type decoder struct {
	buf     []byte // current input, consumed from pos
	pos     int
	base    int64  // body offset of buf[0]
	line    []byte // partial line carried across Feed calls
	data    []byte
	typ     []byte
	id      []byte
	hasData bool
	skipLF  bool // the previous line ended with CR: a leading LF completes the CRLF
	start   int64
	eof     bool
	sent    bool // an event was dispatched: its buffers are reused at the next Next
	err     error
}

// Reset prepares the decoder for a new body, keeping its buffers.
func (d *decoder) Reset() {
	*d = decoder{line: d.line[:0], data: d.data[:0], typ: d.typ[:0], id: d.id[:0]}
}

// pending returns the bytes of the partial line and event the decoder holds (memory budget);
// capacity what its buffers have allocated.
func (d *decoder) pending() int  { return len(d.line) + len(d.data) }
func (d *decoder) capacity() int { return cap(d.line) + cap(d.data) + cap(d.typ) + cap(d.id) }

// Offset returns the number of body bytes consumed so far.
func (d *decoder) Offset() int64 { return d.base + int64(d.pos) }

// Err returns the first decoding error (a line longer than maxLine).
func (d *decoder) Err() error { return d.err }

// Feed hands the decoder the next body bytes. The previous input must have been consumed (Next
// returned false). p must stay unchanged until then.
func (d *decoder) Feed(p []byte) {
	d.base += int64(d.pos)
	d.buf, d.pos = p, 0
}

// Finish marks the end of the body: Next then yields a pending event whose final blank line is
// missing.
func (d *decoder) Finish() { d.eof = true }

// Next decodes the next event or comment into ev. It returns false when it needs more input (or,
// after Finish, when the body is done). It is the SSE parser's state machine (line ends, fields,
// dispatch, as the WHATWG event-stream rules order them), kept in one function over the 80-line
// rule: it runs for every event on the read path, and its states read best together.
func (d *decoder) Next(ev *event) bool {
	if d.sent {
		d.sent = false
		d.data, d.typ, d.id = d.data[:0], d.typ[:0], d.id[:0]
	}
	for {
		if d.skipLF && d.pos < len(d.buf) {
			d.skipLF = false
			if d.buf[d.pos] == '\n' {
				d.pos++
			}
		}
		rest := d.buf[d.pos:]
		k := bytes.IndexByte(rest, '\n')
		lim := rest
		if k >= 0 {
			lim = rest[:k]
		}
		if j := bytes.IndexByte(lim, '\r'); j >= 0 {
			k = j
		}
		if k < 0 {
			if len(rest) > 0 {
				if len(d.line)+len(rest) > maxLine {
					if d.err == nil {
						d.err = errLineTooLong
					}
					d.line = d.line[:0]
				} else {
					d.line = append(d.line, rest...)
				}
				d.pos = len(d.buf)
			}
			if !d.eof {
				return false
			}
			// End of body: a final line without terminator, then a pending event.
			if len(d.line) > 0 {
				line := d.line
				d.line = d.line[:0]
				if d.field(line, ev, d.Offset(), false) {
					return true
				}
				continue
			}
			if d.hasData {
				d.dispatch(ev, d.Offset(), false)
				return true
			}
			return false
		}
		line := rest[:k]
		cr := rest[k] == '\r'
		d.pos += k + 1
		end := d.Offset()
		if cr {
			if d.pos < len(d.buf) {
				if d.buf[d.pos] == '\n' {
					d.pos++
				}
			} else {
				d.skipLF = true
			}
		}
		if len(d.line) > 0 {
			if len(d.line)+len(line) > maxLine {
				if d.err == nil {
					d.err = errLineTooLong
				}
				d.line = d.line[:0]
				continue
			}
			d.line = append(d.line, line...)
			line = d.line
			d.line = d.line[:0] // line still aliases the bytes until the next append
		}
		if d.field(line, ev, end, cr) {
			return true
		}
	}
}

// field processes one complete line ending at body offset end; it reports whether ev was filled.
func (d *decoder) field(line []byte, ev *event, end int64, cr bool) bool {
	if len(line) == 0 {
		if !d.hasData {
			d.typ = d.typ[:0]
			d.id = d.id[:0]
			d.start = end
			return false
		}
		d.dispatch(ev, end, cr)
		return true
	}
	if line[0] == ':' {
		*ev = event{Start: d.start, End: end, Comment: true, CR: cr, Data: trimSpace1(line[1:])}
		if !d.hasData && len(d.typ) == 0 {
			d.start = end
		}
		return true
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], trimSpace1(line[i+1:])
	}
	switch string(name) {
	case "data":
		if d.hasData {
			d.data = append(d.data, '\n')
		}
		if len(d.data)+len(value) > maxLine {
			if d.err == nil {
				d.err = errLineTooLong
			}
			return false
		}
		d.data = append(d.data, value...)
		d.hasData = true
	case "event":
		d.typ = append(d.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.id = append(d.id[:0], value...)
		}
	}
	return false
}

func (d *decoder) dispatch(ev *event, end int64, cr bool) {
	*ev = event{Start: d.start, End: end, CR: cr, Type: d.typ, ID: d.id, Data: d.data}
	d.sent = true // the slices stay valid until the next Next, which reuses the arrays
	d.hasData = false
	d.start = end
}

func trimSpace1(b []byte) []byte {
	if len(b) > 0 && b[0] == ' ' {
		return b[1:]
	}
	return b
}
