package wire

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// streamSpec says what the test server streams for one request.
type streamSpec struct {
	events   int           // content events
	interval time.Duration // between events
	crlf     bool          // CRLF line ends
	noDone   bool          // leave out [DONE]
	noSim    bool          // leave out the x-sim comment
}

// stampHandler is a little SSE server that stamps each content event's send (CLOCK_REALTIME ns,
// taken right before the write and right after it returned) and reports the stamps in an x-sim
// comment before [DONE], like the built-in simulator. Query parameters override spec:
// ?n=events&ms=interval.
func stampHandler(spec streamSpec) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sp := spec
		if v := r.URL.Query().Get("n"); v != "" {
			sp.events, _ = strconv.Atoi(v)
		}
		if v := r.URL.Query().Get("us"); v != "" {
			us, _ := strconv.Atoi(v)
			sp.interval = time.Duration(us) * time.Microsecond
		}
		nl := "\n"
		if sp.crlf {
			nl = "\r\n"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(s string) (before, after int64) {
			before = time.Now().UnixNano()
			fmt.Fprint(w, s)
			fl.Flush()
			return before, time.Now().UnixNano()
		}
		send(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"}}]}` + nl + nl)
		sent, ends := make([]string, 0, sp.events), make([]string, 0, sp.events)
		next := time.Now()
		for i := range sp.events {
			next = next.Add(sp.interval)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			fin := "null"
			if i == sp.events-1 {
				fin = `"stop"`
			}
			t, end := send(fmt.Sprintf(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":%s}]}`+nl+nl, i, fin))
			sent, ends = append(sent, strconv.FormatInt(t, 10)), append(ends, strconv.FormatInt(end, 10))
		}
		// One more interval before the usage event, so that the last content event does not share
		// a read with it (a real server sends it at once; that event is then upper_bound).
		time.Sleep(time.Until(next.Add(sp.interval)))
		send(fmt.Sprintf(`data: {"id":"x","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":3}}}`+nl+nl, sp.events))
		tail := ""
		if !sp.noSim {
			tail += `: x-sim {"queue_ns":11,"prefill_ns":22,"decode_ns":33,"sent_ns":[` + strings.Join(sent, ",") +
				`],"sent_end_ns":[` + strings.Join(ends, ",") + "]}" + nl
		}
		if !sp.noDone {
			tail += "data: [DONE]" + nl + nl
		}
		if tail != "" {
			send(tail)
		}
	}
}
