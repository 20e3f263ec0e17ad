package wire

import (
	"fmt"
	"strconv"
)

// Bounds that keep a broken or hostile server from exhausting the client: a response that
// passes one ends with kind too_large, reading stops and its connection is closed. Each is far
// above what an LLM server sends. maxHeaderBytes (framing.go) bounds the head, maxLine
// (sse.go) an SSE line and an event's data.
const (
	// limitEvents bounds the events of one response: each is a chunk row held until the
	// request ends (8 times the 131,072 tokens of the longest outputs served today).
	limitEvents = 1 << 20
	// limitBody bounds the bytes of one response body.
	limitBody = 1 << 30
	// limitWholeBody bounds a non-streaming body, which is held whole until it is parsed: an
	// embeddings response for 2,048 inputs of 3,072 dimensions is about 90 MB.
	limitWholeBody = 256 << 20
)

// maxEvents, maxBody and maxWhole are limitEvents, limitBody and limitWholeBody; tests lower them.
var maxEvents, maxBody, maxWhole int64 = limitEvents, limitBody, limitWholeBody

// wholeBound reports a non-streaming body that passes maxWhole: by its Content-Length before
// any byte is read (declared), or once read bytes exceed it.
func wholeBound(declared string, read int64) error {
	if n, err := strconv.ParseInt(declared, 10, 64); err == nil && n > maxWhole {
		return fmt.Errorf("non-streaming body of %d bytes declared, over %d MiB", n, maxWhole>>20)
	}
	if read > maxWhole {
		return fmt.Errorf("non-streaming body over %d MiB", maxWhole>>20)
	}
	return nil
}

// bodyBound reports the first bound an SSE body read so far passes, or nil: the decoder's line
// bound, more than maxLine bytes since the end of the latest data event (lastEnd; comments and
// lines that are not events do not count as progress), more than maxEvents events or maxBody
// bytes.
func bodyBound(dec *decoder, lastEnd int64, events int) error {
	off := dec.Offset()
	switch {
	case dec.Err() != nil:
		return fmt.Errorf("%w: over %d MiB", dec.Err(), maxLine>>20)
	case off-lastEnd > maxLine:
		return fmt.Errorf("%d MiB of body without an SSE data event", (off-lastEnd)>>20)
	case int64(events) > maxEvents:
		return fmt.Errorf("more than %d events", maxEvents)
	case off > maxBody:
		return fmt.Errorf("body over %d MiB", maxBody>>20)
	}
	return nil
}
