package wire

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

func TestDoStream(t *testing.T) {
	for _, crlf := range []bool{false, true} {
		srv := httptest.NewServer(stampHandler(streamSpec{events: 5, interval: time.Millisecond, crlf: crlf}))
		c := NewClient(ClientConfig{MaxConns: 2, KeepText: true, Timestamps: true})
		// The kernel turns RX timestamps on host-wide from a deferred work item; NewClient
		// holds them on with a socket of its own, so the first request is stamped.
		var res Result
		for i := range 2 {
			c.do(context.Background(), &Request{Seq: 42, URL: srv.URL + "/v1/chat/completions", Body: []byte(`{}`)}, &res)
			q := &res.Req
			if q.ErrorKind != "" {
				t.Fatalf("crlf=%v: error %s: %s", crlf, q.ErrorKind, q.ErrorMessage)
			}
			if q.ConnReused != (i == 1) {
				t.Errorf("crlf=%v call %d: ConnReused = %v; want %v", crlf, i, q.ConnReused, i == 1)
			}
			// role + 5 content + usage + [DONE]
			if len(res.Chunks) != 8 || q.Chunks != 8 {
				t.Fatalf("crlf=%v: %d chunks (row says %d); want 8", crlf, len(res.Chunks), q.Chunks)
			}
			wantKinds := []string{schemas.ChunkEmpty, schemas.ChunkContent, schemas.ChunkContent, schemas.ChunkContent, schemas.ChunkContent, schemas.ChunkContent, schemas.ChunkUsage, schemas.ChunkDone}
			for j, ch := range res.Chunks {
				if ch.Kind != wantKinds[j] || ch.Index != int32(j) || ch.Seq != 42 {
					t.Errorf("crlf=%v chunk %d: kind %s index %d seq %d; want %s %d 42", crlf, j, ch.Kind, ch.Index, ch.Seq, wantKinds[j], j)
				}
				if runtime.GOOS == "linux" {
					checkQuality(t, res.Chunks, j)
				}
				if content := ch.Kind == schemas.ChunkContent; content != (ch.ServerSentNs != 0) || content != (ch.ServerSentEndNs != 0) {
					t.Errorf("crlf=%v chunk %d (%s): ServerSentNs = %v, ServerSentEndNs = %v; want both set exactly on content chunks", crlf, j, ch.Kind, ch.ServerSentNs, ch.ServerSentEndNs)
				}
				// On loopback the kernel stamps a segment inside the sender's write: an exact
				// event's kernel time lies between the server's stamps around that write.
				if ch.ServerSentNs != 0 && ch.ServerSentEndNs != 0 && ch.RxKernelNs != 0 && ch.Quality == qualityExact {
					if k := ch.RxKernelNs; k < ch.ServerSentNs || k > ch.ServerSentEndNs {
						t.Errorf("crlf=%v chunk %d: kernel time %d outside the server's write [%d, %d]", crlf, j, k, ch.ServerSentNs, ch.ServerSentEndNs)
					}
				}
			}
			if res.Text != "tok0 tok1 tok2 tok3 tok4 " || q.OutputText != res.Text {
				t.Errorf("crlf=%v: Text = %q; want tok0..tok4", crlf, res.Text)
			}
			if q.ContentBytes != 25 || q.FinishReason != "stop" {
				t.Errorf("crlf=%v: content %d finish %q; want 25 stop", crlf, q.ContentBytes, q.FinishReason)
			}
			if q.UsagePrompt == nil || *q.UsagePrompt != 7 || q.UsageComplete == nil || *q.UsageComplete != 5 || q.UsageCached == nil || *q.UsageCached != 3 {
				t.Errorf("crlf=%v: usage %v %v %v; want 7 5 3", crlf, q.UsagePrompt, q.UsageComplete, q.UsageCached)
			}
			if q.ServerQueueNs == nil || *q.ServerQueueNs != 11 || q.ServerPrefillNs == nil || *q.ServerPrefillNs != 22 || q.ServerDecodeNs == nil || *q.ServerDecodeNs != 33 {
				t.Errorf("crlf=%v: server times %v %v %v; want 11 22 33", crlf, q.ServerQueueNs, q.ServerPrefillNs, q.ServerDecodeNs)
			}
			if q.OffsetMismatch {
				t.Errorf("crlf=%v: OffsetMismatch = true; want false", crlf)
			}
			if q.Status != 200 || q.SentNs < q.SendStartNs || q.HeadersNs == nil || *q.HeadersNs < q.SentNs-int64(time.Millisecond) || q.DoneNs == nil || *q.DoneNs < *q.HeadersNs {
				t.Errorf("crlf=%v: status %d send_start %d sent %d headers %v done %v; want 200 and ordered times", crlf, q.Status, q.SendStartNs, q.SentNs, q.HeadersNs, q.DoneNs)
			}
			if (q.ConnectNs == nil) != q.ConnReused {
				t.Errorf("crlf=%v: ConnectNs = %v with reused %v; want set exactly on new connections", crlf, q.ConnectNs, q.ConnReused)
			}
		}
		c.Close()
		srv.Close()
	}
}

// checkQuality checks chunk j's timestamp quality: kernel time present, and upper_bound only when
// the event shares its read with a later one (the next chunk has the same kernel time), exact
// otherwise.
func checkQuality(t *testing.T, chunks []schemas.RawChunk, j int) {
	t.Helper()
	ch := chunks[j]
	if ch.RxKernelNs == 0 {
		t.Errorf("chunk %d: RxKernelNs = nil (quality %s); want a kernel time", j, ch.Quality)
		return
	}
	shared := j+1 < len(chunks) && chunks[j+1].RxKernelNs != 0 && chunks[j+1].RxKernelNs == ch.RxKernelNs
	want := qualityExact
	if shared {
		want = qualityUpperBound
	}
	if ch.Quality != want {
		t.Errorf("chunk %d: quality %s (read shared with the next event: %v); want %s", j, ch.Quality, shared, want)
	}
}

func TestWarmOpensConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.NotFound(w, r) // falls back to /v1/models
			return
		}
		fmt.Fprint(w, `{"data":[]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := NewClient(ClientConfig{MaxConns: 8, Timestamps: true})
	defer c.Close()
	if err := c.Warm(context.Background(), srv.URL+"/", 8); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	if n := conns.Load(); n != 8 {
		t.Errorf("Warm(8) opened %d connections; want 8", n)
	}
	// The next requests reuse them: no new connection.
	var res Result
	c.do(context.Background(), &Request{URL: srv.URL + "/v1/models", Body: []byte(`{}`)}, &res)
	if !res.Req.ConnReused || conns.Load() != 8 {
		t.Errorf("after Warm: ConnReused %v, connections %d; want true, 8", res.Req.ConnReused, conns.Load())
	}
	bad := NewClient(ClientConfig{})
	defer bad.Close()
	if err := bad.Warm(context.Background(), closedURL(t), 2); err == nil {
		t.Errorf("Warm(closed port) = nil; want an error")
	}
}
