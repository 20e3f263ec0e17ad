package worker

import (
	"container/heap"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestNextDue(t *testing.T) {
	const start = 1_000_000_000
	roots := func(offsets ...int64) []*item {
		out := make([]*item, len(offsets))
		for i, o := range offsets {
			out[i] = &item{r: schemas.ScheduleRequest{PlannedOffsetNs: o}}
		}
		return out
	}
	timed := func(dues ...int64) timedHeap {
		var h timedHeap
		for _, d := range dues {
			heap.Push(&h, timedItem{due: d})
		}
		return h
	}
	for _, tc := range []struct {
		name      string
		roots     []*item
		i         int
		timed     timedHeap
		due       int64
		fromTimed bool
	}{
		{"nothing", nil, 0, nil, -1, false},
		{"all roots sent, nothing timed", roots(0, 10), 2, nil, -1, false},
		{"first root", roots(0, 10), 0, nil, start, false},
		{"next root", roots(0, 10, 20), 1, nil, start + 10, false},
		{"timed only", nil, 0, timed(start + 5), start + 5, true},
		{"timed after the roots", roots(0, 10), 2, timed(start+30, start+25), start + 25, true},
		{"timed earlier than the root", roots(0, 100), 1, timed(start + 50), start + 50, true},
		{"root earlier than the timed", roots(0, 40), 1, timed(start + 50), start + 40, false},
		{"a tie goes to the root", roots(50), 0, timed(start + 50), start + 50, false},
		{"the heap's earliest", roots(100), 0, timed(start+90, start+60, start+80), start + 60, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, fromTimed := nextDue(start, tc.roots, tc.i, tc.timed)
			if due != tc.due || fromTimed != tc.fromTimed {
				t.Errorf("nextDue = %d, %v; want %d, %v", due, fromTimed, tc.due, tc.fromTimed)
			}
		})
	}
}
