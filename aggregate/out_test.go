package aggregate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestCheckOut(t *testing.T) {
	root := t.TempDir()
	mk := func(name, runID string, files ...string) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if runID != "" {
			m := &schemas.Manifest{RunID: runID, Status: schemas.StatusComplete}
			if err := m.Write(filepath.Join(dir, schemas.ManifestName)); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	a := mk("a", "r1", "raw/requests-w00-0001.parquet")
	b := mk("b", "r1", "raw/requests-w00-0001.parquet")
	runs := []*runDir{{dir: a, manifest: &schemas.Manifest{RunID: "r1"}}, {dir: b, manifest: &schemas.Manifest{RunID: "r1"}}}
	broken := mk("broken", "")
	if err := os.WriteFile(filepath.Join(broken, schemas.ManifestName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, out string
		refused   string // a part of the refusal; "" when written as it is
		forceable bool
	}{
		{"the first input", a + "/", "", false},
		{"another input", b, "given as input", false},
		{"absent", filepath.Join(root, "new"), "", false},
		{"empty", mk("empty", ""), "", false},
		{"this run's replay output (Kubernetes)", mk("planned", "r1", "schedule/requests.parquet"), "", false},
		{"an earlier merge of this run", mk("merged", "r1", "metrics/stages.parquet"), "", false},
		{"another run", mk("other", "r2", "raw/requests-w00-0001.parquet"), "run r2, status complete; raw/ (1 files)", true},
		{"a host of this run not given", mk("host2", "r1", "raw/requests-w00-0001.parquet"), "a capture: raw/ (1 files)", true},
		{"a manifest that does not parse", broken, "does not parse", true},
	} {
		replace, err := checkOut(tc.out, runs, false)
		switch {
		case tc.refused == "" && (err != nil || replace):
			t.Errorf("%s: checkOut(%s) = %v, %v; want it written as it is", tc.name, tc.out, replace, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: checkOut(%s) = %v; want a refusal naming %q", tc.name, tc.out, err, tc.refused)
		}
		replace, err = checkOut(tc.out, runs, true)
		if tc.forceable && (err != nil || !replace) {
			t.Errorf("%s: checkOut(%s, force) = %v, %v; want it replaced", tc.name, tc.out, replace, err)
		}
	}
}
