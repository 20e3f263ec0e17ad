package aggregate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/hostclock"
	"github.com/wirebench/wirebench/schemas"
)

// shardHost is host i of a run split n ways: two open-loop stages of 30 requests each, request
// seq planned (and sent) at t0 + stage s + (seq mod 30) × 33 ms, shard i sending the seqs equal
// to i mod n; kept says which of its requests it recorded (nil: all). Every answer is two
// tokens, 10 and 11 ms after the send, done at 12 ms.
func shardHost(i, n int, kept func(seq int64) bool) *fixture {
	f := newFixture()
	f.stages = []schemas.StageInfo{
		{Index: 0, Name: "a", Mode: "open", Rate: 30, OffsetNs: 0, DurationNs: 1e9, Requests: 30},
		{Index: 1, Name: "b", Mode: "open", Rate: 30, OffsetNs: 1e9, DurationNs: 1e9, Requests: 30},
	}
	f.shard = fmt.Sprintf("%d/%d", i, n)
	f.planned = map[int32]int64{}
	for st := range int32(2) {
		f.workers = append(f.workers, schemas.Worker{Shard: int32(i), Stage: st, WallNs: 1e9, CPUUserNs: 1e7})
	}
	for seq := int64(0); seq < 60; seq++ {
		if seq%int64(n) != int64(i) {
			continue
		}
		st := int32(seq / 30)
		f.planned[st]++
		if kept != nil && !kept(seq) {
			continue
		}
		at := t0 + int64(st)*1e9 + (seq%30)*33*ms
		f.req(schemas.RawRequest{Seq: seq, Stage: st, Shard: int32(i), PlannedNs: at, SentNs: at, SendStartNs: at, DoneNs: ptr[int64](at + 12*ms),
			UsagePrompt: ptr[int32](10), UsageComplete: ptr[int32](2), InputTokens: 10})
		for j, d := range []int64{10, 11, 12} {
			f.chunk(0, schemas.RawChunk{Seq: seq, Index: int32(j), RxKernelNs: at + d*ms, RxUserNs: at + d*ms + 1000, Kind: []string{"content", "content", "done"}[j]})
		}
	}
	return f
}

// mergeHosts writes the fixtures as host directories and aggregates them into a fresh
// directory; replayOnly adds a directory holding only replay's output.
func mergeHosts(t *testing.T, cfg Config, replayOnly bool, hosts ...*fixture) (*Summary, *schemas.Manifest, error) {
	t.Helper()
	root := t.TempDir()
	for i, f := range hosts {
		cfg.Runs = append(cfg.Runs, f.write(t, filepath.Join(root, fmt.Sprintf("host%d", i))))
	}
	if replayOnly {
		f := newFixture()
		f.status = schemas.StatusPlanned
		cfg.Runs = append(cfg.Runs, f.write(t, filepath.Join(root, "replay-only")))
	}
	cfg.Out = filepath.Join(root, "merged")
	sum, err := Run(context.Background(), cfg, quietLog())
	if err != nil {
		return nil, nil, err
	}
	m, err := schemas.ReadManifest(filepath.Join(cfg.Out, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return sum, m, nil
}

func TestMissingHosts(t *testing.T) {
	killed := shardHost(1, 3, func(seq int64) bool { return seq < 40 }) // died in stage 1
	killed.status = schemas.StatusRunning
	killed.missing = []string{"capture did not finish (the coordinator stopped while status was running)"}
	tests := []struct {
		name       string
		hosts      []*fixture
		replayOnly bool
		status     string
		missing    []string    // substrings of the merged manifest's missing, all present
		stageGap   [2][]string // substrings of each stage's missing; none: the stage is whole
	}{
		{"every host", []*fixture{shardHost(0, 3, nil), shardHost(1, 3, nil), shardHost(2, 3, nil)}, false,
			schemas.StatusComplete, nil, [2][]string{}},
		{"two of three hosts given", []*fixture{shardHost(0, 3, nil), shardHost(1, 3, nil)}, false,
			schemas.StatusFailed, []string{"shard 2/3: no host directory given"},
			[2][]string{{"shard 2/3 not captured by any host given: its 10 planned requests are missing"}, {"shard 2/3", "its 10 planned"}}},
		{"a host with only replay's output", []*fixture{shardHost(0, 3, nil), shardHost(1, 3, nil)}, true,
			schemas.StatusFailed, []string{"replay-only: never captured (status planned", "shard 2/3: no host directory given"},
			[2][]string{{"shard 2/3", "its 10 planned"}, {"shard 2/3", "its 10 planned"}}},
		{"a host killed in stage 1", []*fixture{shardHost(0, 3, nil), killed, shardHost(2, 3, nil)}, false,
			schemas.StatusFailed, []string{"host1 (shard 1/3): capture did not finish"},
			[2][]string{nil, {"host1 (shard 1/3): capture did not finish", "3 of its 10 planned requests recorded"}}},
	}
	for _, tt := range tests {
		sum, m, err := mergeHosts(t, Config{}, tt.replayOnly, tt.hosts...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if m.Status != tt.status || len(m.Missing) > 0 != (len(tt.missing) > 0) {
			t.Errorf("%s: merged status %q, missing %q; want %q, missing %v", tt.name, m.Status, m.Missing, tt.status, tt.missing)
		}
		all := strings.Join(m.Missing, "\n")
		for _, want := range tt.missing {
			if !strings.Contains(all, want) {
				t.Errorf("%s: merged missing %q lacks %q", tt.name, m.Missing, want)
			}
		}
		if len(m.Hosts) != len(tt.hosts)+map[bool]int{true: 1}[tt.replayOnly] {
			t.Errorf("%s: merged hosts %+v; want one per directory given", tt.name, m.Hosts)
		}
		for i, st := range sum.Stages {
			want := tt.stageGap[i]
			if (st.Missing != "") != (len(want) > 0) || (len(want) > 0) != (st.LoadBlame == schemas.BlameMissing) || (len(want) > 0) == st.LoadDelivered {
				t.Errorf("%s: stage %d missing %q, delivered %v, blame %q; want missing %v, not delivered, blamed on missing", tt.name, i, st.Missing, st.LoadDelivered, st.LoadBlame, want)
			}
			for _, w := range want {
				if !strings.Contains(st.Missing, w) || !strings.Contains(st.LoadReason, w) {
					t.Errorf("%s: stage %d missing %q, load reason %q; want both to contain %q", tt.name, i, st.Missing, st.LoadReason, w)
				}
			}
		}
	}
}

func TestHostsMustSplitOneWay(t *testing.T) {
	if _, _, err := mergeHosts(t, Config{}, false, shardHost(0, 3, nil), shardHost(0, 3, nil)); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "both shard 0/3") {
		t.Errorf("one shard twice: err = %v; want ErrInput naming shard 0/3", err)
	}
	if _, _, err := mergeHosts(t, Config{}, false, shardHost(0, 3, nil), shardHost(1, 2, nil)); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "shard 1/2") {
		t.Errorf("two shard counts: err = %v; want ErrInput naming shard 1/2", err)
	}
}

// clockAt is a synchronised clock reading of the kernel with boot id boot and max error maxNs.
func clockAt(boot string, maxNs int64) *schemas.Clock {
	return &schemas.Clock{Source: "adjtimex", Synchronized: true, State: "TIME_OK", MaxErrorNs: maxNs, EstErrorNs: maxNs / 10, BootID: boot}
}

func TestClockUncertainty(t *testing.T) {
	host := func(boot string, maxNs int64) *runDir {
		return &runDir{dir: boot, shards: 1, manifest: &schemas.Manifest{Clock: clockAt(boot, maxNs)}}
	}
	noClock := &runDir{dir: "old", shards: 1, manifest: &schemas.Manifest{}}
	tests := []struct {
		name string
		runs []*runDir
		want int64
	}{
		{"one host", []*runDir{host("a", 5*ms)}, 0},
		{"hosts under one kernel read one clock", []*runDir{host("a", 5*ms), host("a", 7*ms)}, 0},
		{"two clocks: both max errors", []*runDir{host("a", 2*ms), host("b", 3*ms)}, 5 * ms},
		{"three clocks: the worst pair", []*runDir{host("a", 1*ms), host("b", 3*ms), host("c", 2*ms)}, 5 * ms},
		{"a clock's max error is its hosts' largest", []*runDir{host("a", 1*ms), host("a", 4*ms), host("b", 1*ms)}, 5 * ms},
		{"an unknown clock counts 0", []*runDir{host("a", 2*ms), noClock}, 2 * ms},
	}
	for _, tt := range tests {
		if got := clockUncertainty(tt.runs); got != tt.want {
			t.Errorf("%s: clockUncertainty = %d; want %d", tt.name, got, tt.want)
		}
	}
}

// TestClockUncertaintyOnWindowsNotLatencies: hosts on two kernels carry their clocks' max errors
// on the stage windows, rates and timeseries, and not on a single latency bound.
func TestClockUncertaintyOnWindowsNotLatencies(t *testing.T) {
	run := func(boots [3]string) (*Summary, *schemas.Manifest) {
		var hosts []*fixture
		for i, b := range boots {
			h := shardHost(i, 3, nil)
			h.clock = clockAt(b, int64(i+1)*100_000) // 0.1, 0.2, 0.3 ms: within the tolerance
			hosts = append(hosts, h)
		}
		sum, m, err := mergeHosts(t, Config{}, false, hosts...)
		if err != nil {
			t.Fatal(err)
		}
		return sum, m
	}
	one, mOne := run([3]string{"k", "k", "k"})
	two, mTwo := run([3]string{"k", "other", "k"})
	// Clocks k (max 0.1 and 0.3 ms: 0.3) and other (0.2 ms): 0.5 ms apart at most.
	const want = 500_000
	if mOne.ClockUncertaintyNs != 0 || mTwo.ClockUncertaintyNs != want {
		t.Errorf("manifest clock_uncertainty_ns %d (one kernel), %d (two); want 0 and %d", mOne.ClockUncertaintyNs, mTwo.ClockUncertaintyNs, want)
	}
	for i := range two.Stages {
		a, b := one.Stages[i], two.Stages[i]
		if a.ClockUncertaintyNs != 0 || b.ClockUncertaintyNs != want {
			t.Errorf("stage %d clock_uncertainty_ns %d (one kernel), %d (two); want 0 and %d", i, a.ClockUncertaintyNs, b.ClockUncertaintyNs, want)
		}
		for _, d := range []struct {
			name string
			x, y schemas.Dist
		}{{"ttft", a.TTFT, b.TTFT}, {"tpot", a.TPOT, b.TPOT}, {"itl", a.ITL, b.ITL}, {"e2e", a.E2E, b.E2E}, {"ntpot", a.NTPOT, b.NTPOT}, {"send lag", a.SendLag, b.SendLag}} {
			if d.x.String() != d.y.String() {
				t.Errorf("stage %d %s with two clocks %+v; want as with one %+v (a latency is measured on one host)", i, d.name, d.y, d.x)
			}
		}
		if !eq(a.UncertaintyNs, b.UncertaintyNs) || a.ClientBound != b.ClientBound {
			t.Errorf("stage %d latency uncertainty %s client-bound %v with two clocks; want %s, %v as with one", i, show(b.UncertaintyNs), b.ClientBound, show(a.UncertaintyNs), a.ClientBound)
		}
	}
	ts, err := schemas.ReadFile[schemas.Timeseries](filepath.Join(two.Out, "metrics", "timeseries.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ts {
		if r.ClockUncertaintyNs != want {
			t.Fatalf("timeseries stage %d bucket %d: clock_uncertainty_ns %d; want %d", r.Stage, r.BucketNs, r.ClockUncertaintyNs, want)
		}
	}
	// A stage only one host recorded compares nothing across clocks.
	lone := shardHost(1, 3, func(seq int64) bool { return seq < 30 })
	lone.clock, lone.status = clockAt("other", 200_000), schemas.StatusFailed
	h0 := shardHost(0, 3, func(seq int64) bool { return seq < 30 })
	h0.clock, h0.status = clockAt("k", 100_000), schemas.StatusFailed
	h2 := shardHost(2, 3, nil)
	h2.clock = clockAt("k", 300_000)
	sum, _, err := mergeHosts(t, Config{}, false, h0, lone, h2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stages[0].ClockUncertaintyNs != want || sum.Stages[1].ClockUncertaintyNs != 0 {
		t.Errorf("stage clock_uncertainty_ns %d, %d; want %d (three hosts, two kernels) and 0 (only host 2 recorded stage 1)", sum.Stages[0].ClockUncertaintyNs, sum.Stages[1].ClockUncertaintyNs, want)
	}
}

// TestUnsynchronisedClockWarns: a host whose kernel says its clock is not synchronised (a
// faked adjtimex read), or whose max error exceeds the tolerance, is a warning, and with Strict
// an error, when the hosts read different clocks; hosts under one kernel are not judged.
func TestUnsynchronisedClockWarns(t *testing.T) {
	unsync := hostclock.ReadWith(func(tx *unix.Timex) (int, error) {
		tx.Status, tx.Maxerror, tx.Esterror = unix.STA_UNSYNC, 16_000_000, 16_000_000
		return unix.TIME_ERROR, nil
	})
	hosts := func(boot1 string, c1 schemas.Clock) []*fixture {
		a, b := shardHost(0, 2, nil), shardHost(1, 2, nil)
		c1.BootID = boot1
		a.clock, b.clock = clockAt("k", 100_000), &c1
		return []*fixture{a, b}
	}
	tests := []struct {
		name string
		cfg  Config
		fx   []*fixture
		warn string // "" = no clock warning
	}{
		{"unsynchronised, another kernel", Config{}, hosts("other", unsync), "host1 (shard 1/2)'s clock is not synchronised (adjtimex TIME_ERROR, status 0x40): its times may be off by up to 16s"},
		{"unsynchronised, one kernel", Config{}, hosts("k", unsync), ""},
		{"max error over the default 1 ms", Config{}, hosts("other", *clockAt("", 3*ms)), "max error 3ms exceeds the clock tolerance 1ms"},
		{"max error within a 5 ms tolerance", Config{ClockTolerance: 5e6}, hosts("other", *clockAt("", 3*ms)), ""},
		{"no clock state", Config{}, hosts("other", schemas.Clock{Error: "adjtimex: operation not permitted"}), "could not read its clock state"},
	}
	for _, tt := range tests {
		sum, m, err := mergeHosts(t, tt.cfg, false, tt.fx...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := ""
		for _, w := range sum.Warnings {
			if strings.Contains(w, "clock") {
				got += w + "\n"
			}
		}
		if (tt.warn == "") != (got == "") || !strings.Contains(got, tt.warn) {
			t.Errorf("%s: clock warnings %q; want %q", tt.name, got, tt.warn)
		}
		if len(m.Hosts) != 2 || m.Hosts[1].Clock == nil || m.Hosts[1].Clock.Synchronized != tt.fx[1].clock.Synchronized {
			t.Errorf("%s: merged hosts %+v; want each host's clock", tt.name, m.Hosts)
		}
		strict := tt.cfg
		strict.Strict = true
		_, _, err = mergeHosts(t, strict, false, tt.fx...)
		if tt.warn == "" && err != nil {
			t.Errorf("%s: strict: %v; want no error", tt.name, err)
		}
		if tt.warn != "" && (!errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tt.warn)) {
			t.Errorf("%s: strict: err = %v; want ErrInput with %q", tt.name, err, tt.warn)
		}
	}
}

func TestMergeHosts(t *testing.T) {
	a := handRun()
	b := handRun()
	// Host b's requests are other seqs; its times are taken as they are (no clock offset).
	a.shard, b.shard = "0/2", "1/2"
	a.stages[0].Requests = 200 // the plan of both hosts (a's manifest is the reference)
	for k, rows := range b.reqs {
		for i := range rows {
			rows[i].Seq += 100
		}
		for i := range b.chunks[k] {
			b.chunks[k][i].Seq += 100
		}
	}
	da, db, out := a.write(t, t.TempDir()), b.write(t, t.TempDir()), t.TempDir()
	sum, err := Run(context.Background(), Config{Runs: []string{da, db}, Out: out}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 12 || sum.Stages[0].Requests != 12 || sum.Stages[0].Completed != 10 {
		t.Errorf("merged: %d requests read, stage requests %d completed %d; want 12, 12, 10", sum.Requests, sum.Stages[0].Requests, sum.Stages[0].Completed)
	}
	got := readRequests(t, out)
	if got[101].SentNs != got[1].SentNs || *got[101].TTFTNs != *got[1].TTFTNs {
		t.Errorf("host b: sent %d vs %d, ttft %d vs %d; want its times as they are", got[101].SentNs, got[1].SentNs, *got[101].TTFTNs, *got[1].TTFTNs)
	}
	if _, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName)); err != nil {
		t.Errorf("merged manifest: %v", err)
	}

	b.runID = "run-2"
	db2 := b.write(t, t.TempDir())
	if _, err := Run(context.Background(), Config{Runs: []string{da, db2}, Out: t.TempDir()}, quietLog()); err == nil || !strings.Contains(err.Error(), "run-2") {
		t.Errorf("merging two run ids: err = %v; want an error naming run-2", err)
	}
}
