package aggregate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// reconcileRun is handRun (seqs 1 to 6 from worker 0) plus seq 7 from worker 1, its host
// planning those 7 requests of stage 0.
func reconcileRun() *fixture {
	f := handRun()
	f.planned = map[int32]int64{0: 7}
	f.req(schemas.RawRequest{Seq: 7, Worker: 1, PlannedNs: t0 + 600*ms, SentNs: t0 + 600*ms, DoneNs: ptr[int64](t0 + 611*ms), InputTokens: 10})
	f.chunk(1, schemas.RawChunk{Seq: 7, Index: 0, RxUserNs: t0 + 610*ms, Kind: "content"})
	f.chunk(1, schemas.RawChunk{Seq: 7, Index: 1, RxUserNs: t0 + 611*ms, Kind: "done"})
	return f
}

func TestReconcile(t *testing.T) {
	setManifest := func(edit func(m *schemas.Manifest)) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			path := filepath.Join(dir, schemas.ManifestName)
			m, err := schemas.ReadManifest(path)
			if err != nil {
				t.Fatal(err)
			}
			edit(m)
			if err := m.Write(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name     string
		edit     func(f *fixture)               // the run before it is written
		damage   func(t *testing.T, dir string) // after
		requests int                            // rows of metrics/requests.parquet
		missing  []string                       // in stage 0's missing; none: nothing missing
		err      string                         // Run fails with this (strict or not)
		strict   string                         // with Strict, Run fails with this (default: err)
	}{
		{name: "whole", requests: 7},
		{name: "a request without its last event", edit: func(f *fixture) {
			f.reqs[[2]int{0, 0}][1].Chunks = 3 // seq 2 received 3 events; 2 are in its part
		}, requests: 6, missing: []string{"1 requests recorded without all their events", "raw/chunks-w00-0000.parquet: 1 requests of requests-w00-0000.parquet lack some of their events", "6 of its 7 planned requests recorded"}},
		{name: "a time before the run", edit: func(f *fixture) {
			f.reqs[[2]int{1, 0}][0].PlannedNs = t0 - 3600e9
		}, requests: 6, missing: []string{"raw/requests-w01-0000.parquet: corrupt parquet file: row 1: planned_ns", "outside the run's window", "6 of its 7 planned requests recorded"}},
		{name: "a negative duration", edit: func(f *fixture) {
			f.reqs[[2]int{1, 0}][0].ConnectNs = ptr[int64](-5)
		}, requests: 6, missing: []string{"row 1: connect_ns -5 is a negative or impossible duration"}},
		{name: "a listed part deleted", damage: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "raw", "requests-w01-0000.parquet"))
		}, requests: 6, missing: []string{"raw/requests-w01-0000.parquet: listed in manifest.json with 1 rows but missing", "6 of its 7 planned requests recorded"}},
		{name: "complete, yet rows missing", edit: func(f *fixture) { f.planned[0] = 9 },
			requests: 7, missing: []string{"its manifest says complete and no file is damaged, yet rows are missing, 7 of its 9 planned requests recorded"}},
		{name: "a seq in two parts", edit: func(f *fixture) {
			f.reqs[[2]int{1, 0}][0].Seq = 2
			f.chunks[[2]int{1, 0}][0].Seq, f.chunks[[2]int{1, 0}][1].Seq = 2, 2
		}, err: "seq 2 is recorded in both"},
		{name: "a seq twice in a part", edit: func(f *fixture) {
			f.reqs[[2]int{0, 0}][2].Seq = 2
		}, err: "seq 2 is recorded twice in it"},
		{name: "a seq outside the plan", damage: setManifest(func(m *schemas.Manifest) { m.Stages[0].Requests = 3 }),
			err: "seq 3 is not a request of the plan (0 to 2)"},
		{name: "nothing readable", damage: func(t *testing.T, dir string) {
			for _, p := range []string{"requests-w00-0000", "requests-w01-0000"} {
				os.Remove(filepath.Join(dir, "raw", p+".parquet"))
			}
		}, err: "no request could be read whole", strict: "listed in manifest.json with 6 rows but missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, strict := range []bool{false, true} {
				f := reconcileRun()
				if tt.edit != nil {
					tt.edit(f)
				}
				dir := f.write(t, t.TempDir())
				if tt.damage != nil {
					tt.damage(t, dir)
				}
				sum, err := Run(context.Background(), Config{Runs: []string{dir}, Strict: strict}, quietLog())
				want := tt.err
				if strict && tt.strict != "" {
					want = tt.strict
				}
				switch {
				case want != "":
					if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) {
						t.Errorf("strict=%v: Run error = %v; want ErrInput saying %q", strict, err, want)
					}
				case strict && len(tt.missing) > 0:
					if !errors.Is(err, ErrInput) {
						t.Errorf("strict: Run error = %v; want ErrInput", err)
					}
				case err != nil:
					t.Fatalf("strict=%v: Run: %v", strict, err)
				default:
					checkReconciled(t, dir, sum.Stages[0], tt.requests, tt.missing)
				}
			}
		})
	}
}

// checkReconciled checks stage st and the requests written: requests rows, and missing naming
// each of missing (with the load verdict failed on it), or nothing missing.
func checkReconciled(t *testing.T, dir string, st schemas.Stage, requests int, missing []string) {
	t.Helper()
	if got := len(readRequests(t, dir)); got != requests {
		t.Errorf("requests.parquet has %d rows; want %d", got, requests)
	}
	if len(missing) == 0 {
		if st.Missing != "" || st.LoadBlame == schemas.BlameMissing {
			t.Errorf("stage missing %q, blame %q; want nothing missing", st.Missing, st.LoadBlame)
		}
		return
	}
	for _, m := range missing {
		if !strings.Contains(st.Missing, m) {
			t.Errorf("stage missing %q; want it to say %q", st.Missing, m)
		}
	}
	if st.LoadDelivered || st.LoadBlame != schemas.BlameMissing || !strings.Contains(st.LoadReason, st.Missing) {
		t.Errorf("stage delivered %v, blame %q, reason %q; want not delivered, blamed on missing, the gap in the reason", st.LoadDelivered, st.LoadBlame, st.LoadReason)
	}
}

// TestMergedManifestNamesDamage: a merged run's manifest lists the files found missing or
// damaged, by host.
func TestMergedManifestNamesDamage(t *testing.T) {
	dir := reconcileRun().write(t, t.TempDir())
	truncate(t, filepath.Join(dir, "raw", "chunks-w01-0000.parquet"))
	out := t.TempDir()
	if _, err := Run(context.Background(), Config{Runs: []string{dir}, Out: out}, quietLog()); err != nil {
		t.Fatal(err)
	}
	m, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	want := "host " + dir + ": raw/chunks-w01-0000.parquet: corrupt parquet file"
	if !strings.Contains(strings.Join(m.Missing, "\n"), want) {
		t.Errorf("merged manifest missing %q; want %q", m.Missing, want)
	}
}
