//go:build linux

package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// coalesceRun sends one request for n content events interval apart (stampHandler) with read
// coalescing window d, and returns the result and the socket reads it took.
func coalesceRun(t *testing.T, d time.Duration, n int, interval time.Duration) (*Result, int64) {
	t.Helper()
	srv := httptest.NewServer(stampHandler(streamSpec{events: n, interval: interval}))
	t.Cleanup(srv.Close)
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, Coalesce: d, Timeout: 10 * time.Second})
	t.Cleanup(c.Close)
	var res Result
	reads := c.stats.reads.Load()
	c.do(context.Background(), &Request{URL: srv.URL + "/v1/chat/completions", Body: []byte(`{}`)}, &res)
	q := &res.Req
	// role + n content + usage + [DONE]
	if q.ErrorKind != "" || len(res.Chunks) != n+3 || q.OffsetMismatch {
		t.Fatalf("error %q (%s), %d chunks, offset mismatch %v; want none, %d, false", q.ErrorKind, q.ErrorMessage, len(res.Chunks), q.OffsetMismatch, n+3)
	}
	return &res, c.stats.reads.Load() - reads
}

// TestCoalesceBatchesFastStreams: events 100 µs apart, read with a 2 ms window, come a window
// at a time: a few reads for 64 events, not one or two an event, and every event still decoded
// and mapped to its read (no offset mismatch). Events that shared a read are upper_bound.
func TestCoalesceBatchesFastStreams(t *testing.T) {
	res, reads := coalesceRun(t, 2*time.Millisecond, 64, 100*time.Microsecond)
	t.Logf("64 events 100µs apart, 2ms window: %d reads", reads)
	if reads > 16 {
		t.Errorf("%d reads for 67 events; want at most 16 (the stream lasts about 6.4 ms, a read a 2 ms window once batching)", reads)
	}
	for j := range res.Chunks {
		checkQuality(t, res.Chunks, j)
	}
}

// TestCoalesceLeavesSlowStreams: events 20 ms apart with a 1 ms window are read one at a time,
// each with its own exact kernel time, as without coalescing.
func TestCoalesceLeavesSlowStreams(t *testing.T) {
	res, reads := coalesceRun(t, time.Millisecond, 5, 20*time.Millisecond)
	for j, ch := range res.Chunks {
		if ch.Kind == schemas.ChunkContent && ch.Quality != qualityExact {
			t.Errorf("chunk %d: quality %s; want exact (events 20 ms apart are read one at a time)", j, ch.Quality)
		}
	}
	if reads < 6 {
		t.Errorf("%d reads for 8 events, 5 of them 20 ms apart; want at least 6", reads)
	}
}

// TestCoalesceResumesAfterPause: a burst, a pause far longer than the window, then the last
// events: the batching reader finds the socket empty, goes back to waking on each segment and
// gets the rest (a reader left parked with a high SO_RCVLOWAT would wait for the timeout).
func TestCoalesceResumesAfterPause(t *testing.T) {
	for _, pause := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond} {
		start := time.Now()
		srv := httptest.NewServer(pausingHandler(pause))
		c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, Coalesce: time.Millisecond, Timeout: 10 * time.Second})
		var res Result
		c.do(context.Background(), &Request{URL: srv.URL + "/v1/chat/completions", Body: []byte(`{}`)}, &res)
		c.Close()
		srv.Close()
		q := &res.Req
		if q.ErrorKind != "" || len(res.Chunks) != 13 || q.OffsetMismatch {
			t.Fatalf("pause %v: error %q (%s), %d chunks, offset mismatch %v after %v; want none, 13, false", pause, q.ErrorKind, q.ErrorMessage, len(res.Chunks), q.OffsetMismatch, time.Since(start))
		}
		if el := time.Since(start); el > pause+5*time.Second {
			t.Errorf("pause %v: the request took %v", pause, el)
		}
	}
}

// pausingHandler streams a role event and 8 content events 50 µs apart, pauses, then sends two
// more, the usage event and [DONE], each flushed on its own.
func pausingHandler(pause time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(s string) {
			fmt.Fprint(w, s+"\n\n")
			fl.Flush()
		}
		send(`data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}`)
		for i := range 10 {
			if i == 8 {
				time.Sleep(pause)
			} else {
				time.Sleep(50 * time.Microsecond)
			}
			send(fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":"t%d "}}]}`, i))
		}
		send(`data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":10}}`)
		send(`data: [DONE]`)
	}
}

// TestKillOutlastsReadBy: the watchdog's kill and a batching reader's own deadline (readBy)
// may come in either order; the read fails at once either way, never waits out the reader's
// deadline (a kill lost that way would leave a cut request hanging).
func TestKillOutlastsReadBy(t *testing.T) {
	for _, killFirst := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() {
			if sc, err := ln.Accept(); err == nil {
				<-stop // silent: the read can only end by its deadline
				sc.Close()
			}
		}()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c := newConn(nc, true, false, &counters{})
		if killFirst {
			c.kill()
			c.readBy(time.Now().Add(time.Hour))
		} else {
			c.readBy(time.Now().Add(time.Hour))
			c.kill()
		}
		done := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 64))
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("kill first %v: read error %v; want a deadline error", killFirst, err)
			}
		case <-time.After(2 * time.Second):
			t.Errorf("kill first %v: the read still waits 2 s after the kill", killFirst)
		}
		close(stop)
		nc.Close()
		ln.Close()
	}
}
