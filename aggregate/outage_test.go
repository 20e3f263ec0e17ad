package aggregate

import (
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

const runT0 = int64(1_700_000_000_000_000_000) // a run start

// runAt is runT0 + d.
func runAt(d time.Duration) int64 { return runT0 + int64(d) }

// okReq is a request sent at d answered from d+10ms to d+50ms.
func okReq(d time.Duration) reqState {
	return reqState{sendStartNs: runAt(d), sentNs: runAt(d), headersNs: runAt(d + 10*time.Millisecond), doneNs: runAt(d + 50*time.Millisecond), hasDone: true, status: 200}
}

// failReq is a request begun at d that failed with kind before any answer.
func failReq(d time.Duration, kind string) reqState {
	return reqState{sendStartNs: runAt(d), sentNs: runAt(d), errorKind: kind}
}

// cutReq is a request answered from d+10ms whose connection was reset after a last byte at
// last.
func cutReq(d, last time.Duration) reqState {
	return reqState{sendStartNs: runAt(d), sentNs: runAt(d), headersNs: runAt(d + 10*time.Millisecond), lastEvNs: runAt(last), status: 200, errorKind: schemas.ErrReset}
}

// every returns make(d) for d = from, from+step, ... < to.
func every(from, to, step time.Duration, make func(time.Duration) reqState) []reqState {
	var out []reqState
	for d := from; d < to; d += step {
		out = append(out, make(d))
	}
	return out
}

func TestOutageWindows(t *testing.T) {
	ms := time.Millisecond
	refused := func(d time.Duration) reqState { return failReq(d, schemas.ErrConnect) }
	type want struct {
		start, end, lastSeen time.Duration
		back                 bool
	}
	tests := []struct {
		name string
		reqs [][]reqState
		want []want
	}{
		{"healthy run", [][]reqState{every(0, 3*time.Second, 20*ms, okReq)}, nil},
		{"died at 1s, back at 2s", [][]reqState{
			every(0, 950*ms, 20*ms, okReq),                   // answered up to 990 ms
			{cutReq(960*ms, 995*ms), cutReq(980*ms, 995*ms)}, // in flight at the death: last bytes at 995 ms
			every(1000*ms, 2000*ms, 20*ms, refused),
			every(2000*ms, 3000*ms, 20*ms, okReq), // first answer at 2010 ms
		}, []want{{996 * ms, 2010 * ms, 995 * ms, true}}},
		{"dropped streams are no outage", [][]reqState{
			every(0, 3*time.Second, 20*ms, okReq),
			{cutReq(500*ms, 530*ms), cutReq(1500*ms, 1530*ms), failReq(2500*ms, schemas.ErrReset)},
		}, nil},
		{"one refused connect is no outage", [][]reqState{
			every(0, 1000*ms, 20*ms, okReq), {refused(1065 * ms)}, every(1100*ms, 2000*ms, 20*ms, okReq),
		}, nil},
		{"resets without a refused connect are no outage", [][]reqState{
			every(0, 1000*ms, 20*ms, okReq),
			every(1100*ms, 1500*ms, 20*ms, func(d time.Duration) reqState { return failReq(d, schemas.ErrReset) }),
			every(1600*ms, 2000*ms, 20*ms, okReq),
		}, nil},
		{"not back by the end", [][]reqState{
			every(0, 1000*ms, 20*ms, okReq), every(1100*ms, 2000*ms, 20*ms, refused),
		}, []want{{1100 * ms, 0, 1030 * ms, false}}},
		{"down from the start", [][]reqState{
			every(0, 500*ms, 20*ms, refused), every(500*ms, 1000*ms, 20*ms, okReq),
		}, []want{{0, 510 * ms, -1, true}}},
		{"two outages", [][]reqState{
			every(0, 1000*ms, 20*ms, okReq), every(1100*ms, 1300*ms, 20*ms, refused),
			every(1400*ms, 2000*ms, 20*ms, okReq), every(2100*ms, 2300*ms, 20*ms, refused),
			every(2400*ms, 3000*ms, 20*ms, okReq),
		}, []want{{1100 * ms, 1410 * ms, 1030 * ms, true}, {2100 * ms, 2410 * ms, 2030 * ms, true}}},
	}
	for _, tt := range tests {
		o := newOutageScan(runT0)
		// Parts come in worker order, not time order: add the groups backwards.
		for i := len(tt.reqs) - 1; i >= 0; i-- {
			for j := range tt.reqs[i] {
				o.add(&tt.reqs[i][j])
			}
		}
		got := o.windows()
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d outages %v; want %d", tt.name, len(got), got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			g := got[i]
			lastSeen := int64(0)
			if w.lastSeen >= 0 {
				lastSeen = runAt(w.lastSeen)
			}
			end := int64(0)
			if w.back {
				end = runAt(w.end)
			}
			if g.StartNs != runAt(w.start) || g.EndNs != end || g.Back != w.back || g.LastSeenNs != lastSeen || g.ResolutionNs != int64(ms) {
				t.Errorf("%s: outage %d = start %v end %v back %v last seen %v res %d; want %v %v %v %v 1ms", tt.name, i,
					time.Duration(g.StartNs-runT0), time.Duration(g.EndNs-runT0), g.Back, time.Duration(g.LastSeenNs-runT0), g.ResolutionNs, w.start, w.end, w.back, w.lastSeen)
			}
		}
	}
}

// A run longer than maxOutageBits milliseconds coarsens the resolution and still finds the
// outage, to that resolution.
func TestOutageCoarsens(t *testing.T) {
	o := newOutageScan(runT0)
	long := time.Duration(maxOutageBits) * time.Millisecond * 3 // 14 hours: 4 ms a bit
	reqs := []reqState{okReq(0), okReq(time.Second), failReq(2*time.Second, schemas.ErrConnect),
		failReq(3*time.Second, schemas.ErrConnect), okReq(4 * time.Second), okReq(long)}
	for i := range reqs {
		o.add(&reqs[i])
	}
	got := o.windows()
	if len(got) != 1 || got[0].ResolutionNs != int64(4*time.Millisecond) {
		t.Fatalf("outages %+v; want one at 4 ms resolution", got)
	}
	if g := got[0]; g.StartNs != runAt(2*time.Second) || g.EndNs != runAt(4*time.Second+8*time.Millisecond) || g.LastSeenNs != runAt(time.Second+48*time.Millisecond) {
		t.Errorf("outage start %v end %v last seen %v; want 2s, 4.008s, 1.048s", time.Duration(got[0].StartNs-runT0), time.Duration(got[0].EndNs-runT0), time.Duration(got[0].LastSeenNs-runT0))
	}
	if n := len(o.life); n > maxOutageBits/64 {
		t.Errorf("life set holds %d words; want at most %d", n, maxOutageBits/64)
	}
}

// countOutage counts the rows sent inside each outage, by error kind.
func TestCountOutage(t *testing.T) {
	outs := []schemas.Outage{
		{StartNs: 100, EndNs: 200, Back: true, Errors: map[string]int64{}},
		{StartNs: 300, Errors: map[string]int64{}},
	}
	for _, r := range []schemas.MetricRequest{
		{SentNs: 50}, {SentNs: 100, ErrorKind: "connect"}, {SentNs: 150, ErrorKind: "reset"}, {SentNs: 199, ErrorKind: "connect"},
		{SentNs: 200}, {SentNs: 250}, {SentNs: 300, ErrorKind: "connect"}, {SentNs: 10_000, ErrorKind: "connect"},
	} {
		countOutage(outs, &r)
	}
	if o := outs[0]; o.Requests != 3 || o.Errors["connect"] != 2 || o.Errors["reset"] != 1 {
		t.Errorf("first outage: %d requests, errors %v; want 3, connect 2, reset 1", o.Requests, o.Errors)
	}
	if o := outs[1]; o.Requests != 2 || o.Errors["connect"] != 2 {
		t.Errorf("open outage: %d requests, errors %v; want 2, connect 2", o.Requests, o.Errors)
	}
}
