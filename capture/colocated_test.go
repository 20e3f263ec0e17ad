package capture

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestReadCoalesceDefault: when not given, reads are coalesced only beside the server with the
// tap running, and the manifest's co-location defaults say so; a window given (0 included)
// holds with the tap or without it, and is not listed as a default.
func TestReadCoalesceDefault(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ms, zero := time.Millisecond, time.Duration(0)
	for _, tt := range []struct {
		local, tap bool
		given      *time.Duration
		want       time.Duration
	}{
		{true, true, nil, ColocatedReadCoalesce}, {true, false, nil, 0}, {false, true, nil, 0},
		{true, true, &zero, 0}, {true, true, &ms, ms}, {false, false, &ms, ms},
	} {
		pl := placement{local: tt.local, col: &schemas.Colocation{TargetLocal: tt.local}}
		got := *pl.readCoalesce(tt.given, tt.tap, log)
		listed := len(pl.col.Defaults) == 1
		if got != tt.want || listed != (tt.given == nil && got > 0) {
			t.Errorf("local %v, tap %v, given %v: %v, defaults %q; want %v, listed %v", tt.local, tt.tap, tt.given, got, pl.col.Defaults, tt.want, tt.given == nil && tt.want > 0)
		}
	}
}
