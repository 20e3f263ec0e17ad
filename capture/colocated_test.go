package capture

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestReadCoalesceDefault: reads are coalesced by default only beside the server with the tap
// running; a value given stands either way, 0 included, and the co-located default is noted.
func TestReadCoalesceDefault(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ms, zero := time.Millisecond, time.Duration(0)
	for _, tt := range []struct {
		local, tap bool
		given      *time.Duration
		want       time.Duration
	}{
		{local: true, tap: true, want: DefaultReadCoalesce},
		{local: true, tap: false, want: 0},
		{local: false, tap: true, want: 0},
		{local: true, tap: true, given: &zero, want: 0},
		{local: false, tap: false, given: &ms, want: ms},
	} {
		pl := placement{local: tt.local, col: &schemas.Colocation{TargetLocal: tt.local}}
		got := *pl.readCoalesce(tt.given, tt.tap, log)
		noted := len(pl.col.Defaults) == 1
		if got != tt.want || noted != (tt.given == nil && tt.want > 0) {
			t.Errorf("local %v, tap %v, given %v: %v (noted in the defaults: %v); want %v, noted only when it is the co-located default",
				tt.local, tt.tap, tt.given, got, noted, tt.want)
		}
	}
}
