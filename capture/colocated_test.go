package capture

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestReadCoalesceOffUnlessGiven: reads are coalesced only when a window is given, with the
// tap or without it.
func TestReadCoalesceOffUnlessGiven(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ms, zero := time.Millisecond, time.Duration(0)
	for _, tt := range []struct {
		tap   bool
		given *time.Duration
		want  time.Duration
	}{{true, nil, 0}, {true, &zero, 0}, {true, &ms, ms}, {false, &ms, ms}} {
		if got := *readCoalesce(tt.given, tt.tap, log); got != tt.want {
			t.Errorf("tap %v, given %v: %v; want %v", tt.tap, tt.given, got, tt.want)
		}
	}
}
