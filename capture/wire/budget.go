package wire

import (
	"fmt"
	"sync/atomic"

	"github.com/wirebench/wirebench/schemas"
)

// A client's memory budget bounds the response state its requests in flight hold together:
// each request's events (eventBytes each: the chunk row, its timestamps and the room its
// arrays grow by), its kept text, the decoder's partial line and event data (up to 16 MiB
// each) and a whole body (up to 256 MiB). The per-response bounds (limits.go) leave one worker
// with 32 requests in flight free to hold many GiB (four responses of a million events each
// took 2.3 GB); the budget bounds their sum, so a server that streams millions of events on
// every connection at once ends those requests with kind memory_budget instead of the worker
// being killed for memory.
//
// It is checked after each socket read, so a request passes it by at most one read's events
// (32 KiB) before it is cut. The shared counter moves in budgetBlock steps, about once per 4
// KiB a request grows (16 events), never per event; checking allocates nothing.
type memBudget struct {
	limit int64
	used  atomic.Int64
}

// budgetBlock is the step in which a request reserves budget: small enough that tens of
// thousands of short requests in flight do not reserve more than they hold. Each request
// reserves at least one block: at 64 KiB, 4,096 requests of a few events filled the default
// 256 MiB, and an overloaded capture (16,000 req/s against a server completing 4,000, 14,000
// connections open) cut 28,831 requests with memory_budget while holding a tenth of it; each cut
// closed a connection, so the client dialled again and the machine served fewer requests.
const budgetBlock = 4 << 10

// eventBytes is what one event held counts against the budget: its chunk row (128 bytes), the
// per-event arrays and pointer block (64 bytes) and a quarter for the growth room of the
// arrays (append grows a large slice by a quarter).
const eventBytes = 256

// retainEvents and retainBytes are the largest chunk capacity and buffer a Result keeps for its
// next request; Release drops larger ones, so a pooled Result does not pin the memory of one
// long response.
const (
	retainEvents = 4096
	retainBytes  = 1 << 20
)

// held is the bytes res's request holds now (see memBudget).
func (res *Result) held() int64 {
	s := &res.st
	return int64(len(res.Chunks))*eventBytes + int64(len(s.text)+len(s.sim)+s.dec.pending())
}

// reserve reserves budget for what res holds now. It returns an error of kind memory_budget when
// the budget cannot cover it (the request must stop reading); nil without a budget.
func (c *Client) reserve(res *Result) error {
	b, s := c.budget, &res.st
	if b == nil {
		return nil
	}
	s.budget = b
	need := res.held()
	if need <= s.reserved {
		return nil
	}
	grow := (need - s.reserved + budgetBlock - 1) / budgetBlock * budgetBlock
	if used := b.used.Add(grow); used > b.limit {
		b.used.Add(-grow)
		return &kindError{kind: schemas.ErrMemoryBudget, err: fmt.Errorf(
			"responses in flight would hold %.1f MiB, over the worker's memory budget of %s (capture --memory-budget): this one %.1f MiB after %d events",
			mib(used-s.reserved-grow+need), mibs(b.limit), mib(need), len(res.Chunks))}
	}
	s.reserved += grow
	return nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// mibs formats a budget as the flag takes it: 256MiB.
func mibs(n int64) string {
	b, _ := schemas.Bytes(n).MarshalText()
	return string(b)
}

// Release gives back the budget res holds and drops its buffers beyond what a Result keeps
// for the next request. With a budget, call it once the rows are no longer needed (written);
// Send calls it for a reused Result that was not released.
func (res *Result) Release() {
	s := &res.st
	if s.budget != nil {
		s.budget.used.Add(-s.reserved)
	}
	s.reserved, s.budget = 0, nil
	if cap(res.Chunks) > retainEvents {
		res.Chunks, s.tok, s.srv, s.srvEnd = nil, nil, nil, nil
	}
	if cap(s.text) > retainBytes {
		s.text = nil
	}
	if cap(s.sim) > retainBytes {
		s.sim = nil
	}
	if s.dec.capacity() > retainBytes {
		s.dec = decoder{}
	}
}

// inFlightBytes returns the budget the client's requests hold now (0 without a budget).
func (c *Client) inFlightBytes() int64 {
	if c.budget == nil {
		return 0
	}
	return c.budget.used.Load()
}
