package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// The end-to-end tests of aggregate on a damaged run: a small real capture against the
// simulator, damaged as a disk, a copy or a person would, then aggregated by the real binary.
// None may give a figure that rests on missing, duplicated or damaged data: missing data makes
// the stage's load verdict fail (load_blame missing, with counts and the files named) and the
// trust line red; a duplicate or a run with nothing left fails and leaves the earlier metrics
// as they were; --strict fails on any of it and the manifest's steps say so.

// integrityPlanned is the run's planned requests: 40/s for 4 s.
const integrityPlanned = 160

// integrityRun captures 160 requests from 2 workers, tap off, parts rolled every second (so each
// worker leaves several), and aggregates it once: the good metrics damage must not overwrite.
func integrityRun(t *testing.T) string {
	t.Helper()
	url := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	run := captureRun(t, url, construn.Stage{Rate: 40, Duration: 4 * time.Second, MaxTokens: 4})
	if _, stderr, err := wirebench(t, time.Minute, "capture", run, "--workers", "2", "--tap", "off", "--part-interval", "1s", "--quiet"); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	if _, stderr, err := wirebench(t, time.Minute, "aggregate", run); err != nil {
		t.Fatalf("aggregate of the whole run: %v\n%s", err, stderr)
	}
	return run
}

// damagedCopy copies run (metrics included) into a fresh directory.
func damagedCopy(t *testing.T, run string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listedParts returns the manifest's parts of kind ("raw-requests", "raw-chunks") with rows,
// in path order.
func listedParts(t *testing.T, run, kind string) []schemas.FileEntry {
	t.Helper()
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var out []schemas.FileEntry
	for _, f := range m.Files {
		if f.Kind == kind && f.Rows > 0 {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b schemas.FileEntry) int { return strings.Compare(a.Path, b.Path) })
	if len(out) < 4 {
		t.Fatalf("the run lists %d %s parts with rows; want at least 4 (2 workers, rolled every second)", len(out), kind)
	}
	return out
}

// chunksOf is the chunks part written with requests part e.
func chunksOf(e schemas.FileEntry) string { return strings.Replace(e.Path, "requests-", "chunks-", 1) }

// aggregated is what one aggregate of a damaged run gave.
type aggregated struct {
	stdout, stderr string
	err            error
	stages         []schemas.Stage
	requests       []schemas.MetricRequest
}

func aggregateDamaged(t *testing.T, run string, args ...string) aggregated {
	t.Helper()
	var a aggregated
	a.stdout, a.stderr, a.err = wirebench(t, time.Minute, append([]string{"aggregate", run}, args...)...)
	var err error
	if a.stages, err = schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet")); err != nil {
		t.Fatal(err)
	}
	if a.requests, err = schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet")); err != nil {
		t.Fatal(err)
	}
	return a
}

// wholeRun is what the undamaged run's aggregate gave, by seq.
type wholeRun map[int64]schemas.MetricRequest

// measured is m without what aggregate estimates over the stage (the decomposition): what the
// request's own rows measured.
func measured(m schemas.MetricRequest) schemas.MetricRequest {
	m.QueueNs, m.PrefillNs, m.DecodeNs, m.DecompositionSource = nil, nil, nil, ""
	return m
}

// checkMissing checks that the stage names the damage and counts what is missing: recorded of
// the 160 planned requests are in the figures, the load verdict fails on missing data and the
// trust line is red. The figures rest on whole requests only: each request left is measured
// exactly as in the whole run (so no request without its events is ok, and no bound widened by
// the loss blames the client), and every figure is possible.
func (a aggregated) checkMissing(t *testing.T, whole wholeRun, recorded int64, named ...string) {
	t.Helper()
	if a.err != nil {
		t.Fatalf("aggregate: %v; want exit 0 with the damage named\n%s", a.err, a.stderr)
	}
	if len(a.stages) != 1 {
		t.Fatalf("%d stages; want 1", len(a.stages))
	}
	s := a.stages[0]
	count := fmt.Sprintf("%d of its %d planned requests recorded", recorded, integrityPlanned)
	if s.LoadDelivered || s.LoadBlame != schemas.BlameMissing || !strings.Contains(s.Missing, count) {
		t.Errorf("stage: delivered %v, blame %q, missing %q; want not delivered, blamed on missing, %q", s.LoadDelivered, s.LoadBlame, s.Missing, count)
	}
	for _, n := range named {
		if !strings.Contains(s.Missing, n) || !strings.Contains(a.stderr, n) {
			t.Errorf("%s is not named by the stage's missing (%q) and a warning:\n%s", n, s.Missing, a.stderr)
		}
	}
	if s.Requests != recorded || int64(len(a.requests)) != recorded {
		t.Errorf("stage requests %d, requests.parquet %d rows; want the %d whole requests", s.Requests, len(a.requests), recorded)
	}
	if !strings.HasPrefix(a.stdout, "trust red: ") || !strings.Contains(a.stdout, "lacks data") {
		t.Errorf("stdout:\n%s\nwant trust red on missing data", a.stdout)
	}
	if rate, ttftMax := val(s.AchievedRate), val(s.TTFT.Max); rate <= 0 || rate > 2*40 || ttftMax < 0 || ttftMax > int64(10*time.Second) {
		t.Errorf("achieved rate %.2f/s, TTFT max %v; want figures possible for 40/s against a simulator answering in 5 ms", rate, time.Duration(ttftMax))
	}
	for _, m := range a.requests {
		if w, ok := whole[m.Seq]; !ok || !reflect.DeepEqual(measured(m), measured(w)) {
			t.Errorf("seq %d: %+v\nwant it as the whole run measured it: %+v", m.Seq, m, w)
		}
	}
}

// checkRefused checks that aggregate failed naming each of named, left the earlier metrics as
// they were (before: stages.parquet's bytes) and recorded its failure in the manifest's steps.
func checkRefused(t *testing.T, run string, before []byte, a aggregated, named ...string) {
	t.Helper()
	if a.err == nil {
		t.Fatalf("aggregate exited 0; want a failure naming %q\nstdout:\n%s", named, a.stdout)
	}
	for _, n := range named {
		if !strings.Contains(a.stderr, n) {
			t.Errorf("the error does not name %s:\n%s", n, a.stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(run, "metrics", "stages.parquet")); !bytes.Equal(after, before) {
		t.Error("metrics/stages.parquet changed; want the earlier metrics left as they were")
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	last := m.Steps[len(m.Steps)-1]
	if last.Name != "aggregate" || last.Status != schemas.StatusFailed || !strings.Contains(last.Error, named[0]) {
		t.Errorf("the manifest's last step %+v; want aggregate failed, its error naming %s", last, named[0])
	}
}

// cut truncates path to half its size.
func cut(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

// flip inverts bits of n bytes of path from offset at.
func flip(t *testing.T, path string, at int64, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) < at+int64(n) {
		t.Fatalf("%s has %d bytes; want more than %d", path, len(b), at+int64(n))
	}
	for i := at; i < at+int64(n); i++ {
		b[i] ^= 0xa5
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAggregateOnDamagedRun(t *testing.T) {
	run := integrityRun(t)
	reqParts := listedParts(t, run, "raw-requests")
	good, err := os.ReadFile(filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	whole := wholeRun{}
	for _, m := range rows {
		whole[m.Seq] = m
	}
	// Each request part's requests all streamed events (max_tokens 4): losing a part's chunks
	// loses all its requests.
	victim, other := reqParts[1], reqParts[len(reqParts)-2]

	t.Run("whole", func(t *testing.T) {
		dir := damagedCopy(t, run)
		a := aggregateDamaged(t, dir)
		if a.err != nil || len(a.stages) != 1 || a.stages[0].Missing != "" || a.stages[0].Requests != integrityPlanned {
			t.Fatalf("aggregate of the whole run: %v, stages %+v; want %d requests, nothing missing\n%s", a.err, a.stages, integrityPlanned, a.stderr)
		}
	})

	t.Run("truncated requests part", func(t *testing.T) {
		dir := damagedCopy(t, run)
		cut(t, filepath.Join(dir, victim.Path))
		aggregateDamaged(t, dir).checkMissing(t, whole, integrityPlanned-victim.Rows, victim.Path)
	})

	t.Run("strict fails and says so", func(t *testing.T) {
		dir := damagedCopy(t, run)
		cut(t, filepath.Join(dir, victim.Path))
		checkRefused(t, dir, good, aggregateDamaged(t, dir, "--strict"), victim.Path)
	})

	t.Run("two listed parts deleted", func(t *testing.T) {
		dir := damagedCopy(t, run)
		for _, p := range []string{victim.Path, chunksOf(other)} {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
		aggregateDamaged(t, dir).checkMissing(t, whole, integrityPlanned-victim.Rows-other.Rows, victim.Path, chunksOf(other))
	})

	t.Run("part copied under a new name", func(t *testing.T) {
		dir := damagedCopy(t, run)
		for _, p := range []string{victim.Path, chunksOf(victim)} {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, strings.Replace(p, ".parquet", "9.parquet", 1)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		copied := strings.Replace(victim.Path, ".parquet", "9.parquet", 1)
		checkRefused(t, dir, good, aggregateDamaged(t, dir), victim.Path, copied)
	})

	t.Run("raw emptied", func(t *testing.T) {
		dir := damagedCopy(t, run)
		if err := os.RemoveAll(filepath.Join(dir, "raw")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "raw"), 0o755); err != nil {
			t.Fatal(err)
		}
		checkRefused(t, dir, good, aggregateDamaged(t, dir), "no request could be read whole", "but missing")
	})

	t.Run("truncated chunks part", func(t *testing.T) {
		dir := damagedCopy(t, run)
		cut(t, filepath.Join(dir, chunksOf(victim)))
		a := aggregateDamaged(t, dir)
		a.checkMissing(t, whole, integrityPlanned-victim.Rows, chunksOf(victim))
		if want := fmt.Sprintf("%d requests recorded without all their events", victim.Rows); len(a.stages) == 1 && !strings.Contains(a.stages[0].Missing, want) {
			t.Errorf("stage missing %q; want %q", a.stages[0].Missing, want)
		}
	})

	// The recipe: 16 bytes flipped at offset 1000 of a part (on main, where they fall
	// decides between an error and impossible figures), then 4 bytes in the middle of the
	// sent_ns column's page (on main: exit 0, 0.0 req/s and a TTFT p99 of centuries).
	for _, kind := range []string{"requests", "chunks"} {
		t.Run("flipped bytes in a "+kind+" part", func(t *testing.T) {
			dir := damagedCopy(t, run)
			part := victim.Path
			if kind == "chunks" {
				part = chunksOf(victim)
			}
			flip(t, filepath.Join(dir, part), 1000, 16)
			aggregateDamaged(t, dir).checkMissing(t, whole, integrityPlanned-victim.Rows, part)
		})
	}
	t.Run("flipped bytes in a time column", func(t *testing.T) {
		dir := damagedCopy(t, run)
		path := filepath.Join(dir, victim.Path)
		f, err := schemas.Open[schemas.RawRequest](path)
		if err != nil {
			t.Fatal(err)
		}
		var at int64 = -1
		for _, cc := range f.Metadata().RowGroups[0].Columns {
			if slices.Equal(cc.MetaData.PathInSchema, []string{"sent_ns"}) {
				at = cc.MetaData.DataPageOffset + cc.MetaData.TotalCompressedSize/2
			}
		}
		f.Close()
		if at < 0 {
			t.Fatalf("%s has no column sent_ns", path)
		}
		flip(t, path, at, 4)
		aggregateDamaged(t, dir).checkMissing(t, whole, integrityPlanned-victim.Rows, victim.Path)
	})

	t.Run("impossible value", func(t *testing.T) {
		// A whole file, checksums and all, holding a time a day after the run: the part is
		// damaged, named with the row.
		dir := damagedCopy(t, run)
		path := filepath.Join(dir, victim.Path)
		rows, err := schemas.ReadFile[schemas.RawRequest](path)
		if err != nil {
			t.Fatal(err)
		}
		late := *rows[3].DoneNs + int64(24*time.Hour)
		rows[3].DoneNs = &late
		if err := schemas.WriteFile(path, rows, schemas.Producer{Command: "capture"}); err != nil {
			t.Fatal(err)
		}
		a := aggregateDamaged(t, dir)
		a.checkMissing(t, whole, integrityPlanned-victim.Rows, victim.Path)
		if !strings.Contains(a.stderr, "row 4: done_ns") {
			t.Errorf("the warning does not name row 4 and done_ns:\n%s", a.stderr)
		}
	})
}
