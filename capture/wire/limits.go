package wire

import "fmt"

// Bounds that keep a broken or hostile server from exhausting the client: a response that
// passes one ends with kind too_large, reading stops and its connection is closed. Each is far
// above what an LLM server sends. MaxHeaderBytes (framing.go) bounds the head, MaxLine
// (sse.go) an SSE line, an event's data and a non-streaming body.
const (
	// MaxEvents bounds the events of one response: each is a chunk row held until the
	// request ends (8 times the 131,072 tokens of the longest outputs served today).
	MaxEvents = 1 << 20
	// MaxBody bounds the bytes of one response body.
	MaxBody = 1 << 30
)

// maxEvents and maxBody are MaxEvents and MaxBody; tests lower them.
var maxEvents, maxBody int64 = MaxEvents, MaxBody

// bodyBound reports the first bound an SSE body read so far passes, or nil: the decoder's line
// bound, more than MaxLine bytes since the end of the latest data event (lastEnd; comments and
// lines that are not events do not count as progress), more than maxEvents events or maxBody
// bytes.
func bodyBound(dec *Decoder, lastEnd int64, events int) error {
	off := dec.Offset()
	switch {
	case dec.Err() != nil:
		return fmt.Errorf("%w: over %d MiB", dec.Err(), MaxLine>>20)
	case off-lastEnd > MaxLine:
		return fmt.Errorf("%d MiB of body without an SSE data event", (off-lastEnd)>>20)
	case int64(events) > maxEvents:
		return fmt.Errorf("more than %d events", maxEvents)
	case off > maxBody:
		return fmt.Errorf("body over %d MiB", maxBody>>20)
	}
	return nil
}
