package main

import (
	"strings"
	"testing"
)

// TestConsumeFindsEndAcrossReads feeds a chunked body in every split into two reads and checks
// that exactly one response ends, after its last byte.
func TestConsumeFindsEndAcrossReads(t *testing.T) {
	body := "1c\r\ndata: {\"text\":\"ten \"}\n\n\r\n" + "e\r\ndata: [DONE]\n\n\r\n" + "0\r\n\r\n"
	for cut := range len(body) + 1 {
		done.Store(0)
		ended := make(chan *conn, 2)
		c := &conn{ended: ended}
		c.consume([]byte(body[:cut]))
		if cut < len(body) && done.Load() != 0 {
			t.Fatalf("cut %d: a response ended after %q", cut, body[:cut])
		}
		c.consume([]byte(body[cut:]))
		if done.Load() != 1 || len(ended) != 1 {
			t.Fatalf("cut %d: %d responses ended, want 1", cut, done.Load())
		}
		if len(c.tail) != 0 {
			t.Fatalf("cut %d: tail %q kept after the end", cut, c.tail)
		}
	}
	if strings.Count(body, string(endOfBody)) != 1 {
		t.Fatal("the test body must end only once")
	}
}
