package wire

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unsafe"

	"github.com/wirebench/wirebench/schemas"
)

// eventsHandler streams n minimal events and [DONE].
func eventsHandler(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, strings.Repeat("data: {}\n\n", n)+"data: [DONE]\n\n")
	}
}

// Responses held (not yet released) count against the budget: with two responses of 6,000
// events held, a third passes a budget of 4 MiB and ends with kind memory_budget, keeping the
// events it had; releasing gives every byte back and drops the long responses' arrays.
func TestMemoryBudget(t *testing.T) {
	const events, budget = 6000, 4 << 20 // 6,000 events count 1.5 MB
	srv := httptest.NewServer(eventsHandler(events))
	defer srv.Close()
	c := NewClient(ClientConfig{MaxConns: 3, Timestamps: true, MemoryBudget: budget})
	defer c.Close()
	var res [3]Result
	for i := range res {
		c.do(context.Background(), &Request{Seq: int64(i), URL: srv.URL, Body: []byte(`{}`)}, &res[i])
	}
	for i, want := range []string{"", "", schemas.ErrMemoryBudget} {
		q := res[i].Req
		if q.ErrorKind != want {
			t.Errorf("request %d (%d MiB held before it): %q (%s) with %d chunks; want %q", i, c.inFlightBytes()>>20, q.ErrorKind, q.ErrorMessage, q.Chunks, want)
		}
	}
	q := res[2].Req
	// The budget is checked after each read: the cut request may pass it by one read's events.
	oneRead := int64(32<<10) / int64(len("data: {}\n\n")) * eventBytes
	if held := int64(q.Chunks) * eventBytes; q.Chunks == 0 || held > budget-2*events*eventBytes+oneRead || q.DoneNs != nil ||
		!strings.Contains(q.ErrorMessage, "over the worker's memory budget of 4MiB") {
		t.Errorf("cut request: %d chunks (%d bytes), done %v, message %q; want the chunks that fit what the other two left of 4 MiB (and one read more), no done_ns, the budget named",
			q.Chunks, held, q.DoneNs, q.ErrorMessage)
	}
	if got, max := c.inFlightBytes(), int64(budget); got <= 2*events*eventBytes || got > max {
		t.Errorf("in flight %d bytes before the release; want more than the two whole responses' %d, at most the budget %d", got, 2*events*eventBytes, max)
	}
	for i := range res {
		res[i].Release()
	}
	if got := c.inFlightBytes(); got != 0 {
		t.Errorf("in flight %d bytes after every Release; want 0", got)
	}
	if n := cap(res[0].Chunks); n != 0 {
		t.Errorf("a released Result keeps %d chunk rows of capacity; want the long response's rows dropped", n)
	}
	var again Result
	c.do(context.Background(), &Request{Seq: 9, URL: srv.URL, Body: []byte(`{}`)}, &again)
	if again.Req.ErrorKind != "" || again.Req.Chunks != events+1 {
		t.Errorf("after the release: %q (%s), %d chunks; want ok with %d", again.Req.ErrorKind, again.Req.ErrorMessage, again.Req.Chunks, events+1)
	}
}

// Many short responses held at once fit a budget their bytes fit: 200 responses of 4 events
// (about 1 KiB each) hold about 200 KiB against 1 MiB. A request reserves whole blocks, so each
// reserves at most one block more than it holds.
func TestMemoryBudgetManyShortResponses(t *testing.T) {
	const n, events, budget = 200, 4, 1 << 20
	srv := httptest.NewServer(eventsHandler(events))
	defer srv.Close()
	c := NewClient(ClientConfig{MaxConns: 1, Timestamps: true, MemoryBudget: budget})
	defer c.Close()
	res := make([]Result, n)
	for i := range res {
		c.do(context.Background(), &Request{Seq: int64(i), URL: srv.URL, Body: []byte(`{}`)}, &res[i])
		if q := res[i].Req; q.ErrorKind != "" {
			t.Fatalf("response %d of %d held (%d KiB reserved): %q (%s); want ok", i+1, n, c.inFlightBytes()>>10, q.ErrorKind, q.ErrorMessage)
		}
	}
	if got, most := c.inFlightBytes(), int64(n*(budgetBlock+(events+1)*eventBytes)); got > most {
		t.Errorf("%d responses of %d events reserve %d bytes; want at most %d (a block each beyond what they hold)", n, events, got, most)
	}
	for i := range res {
		res[i].Release()
	}
}

// eventBytes covers what an event holds: its chunk row, the per-event arrays (kernel time,
// rx_after, stream end, tokens) and the rows' pointer block finish allocates, with a quarter
// more for the room append leaves.
func TestEventBytesCoversAnEvent(t *testing.T) {
	row := int64(unsafe.Sizeof(schemas.RawChunk{}))
	if per := row + 3*8 + 4 + 4*8 + 4; per*5/4 > eventBytes {
		t.Errorf("an event holds %d bytes (row %d), %d with growth room; eventBytes %d is too small", per, row, per*5/4, eventBytes)
	}
}

// A whole (non-streaming) body counts its bytes: one larger than the budget is cut.
func TestMemoryBudgetWholeBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"embedding":[`+strings.Repeat("0.5,", 1<<20)+`0]}]}`)
	}))
	defer srv.Close()
	c := NewClient(ClientConfig{API: apiEmbeddings, MaxConns: 1, Timestamps: true, MemoryBudget: 1 << 20})
	defer c.Close()
	var res Result
	c.do(context.Background(), &Request{Seq: 1, URL: srv.URL, Body: []byte(`{}`)}, &res)
	if res.Req.ErrorKind != schemas.ErrMemoryBudget {
		t.Errorf("a 4 MiB body under a 1 MiB budget: %q (%s); want memory_budget", res.Req.ErrorKind, res.Req.ErrorMessage)
	}
	res.Release()
	if got := c.inFlightBytes(); got != 0 {
		t.Errorf("in flight %d bytes after Release; want 0", got)
	}
}
