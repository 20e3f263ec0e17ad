// Package layering holds the test of the import rule: a stage imports only what lies below it
// (schemas at the bottom), so that a stage can be read, tested and replaced alone.
package layering

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/wirebench/wirebench/"

// below lists, for each package of the module, the packages of the module it may import
// (outside its tests). The pipeline replay → capture → aggregate → report hands files down
// through schemas; calibrate and the command orchestrate the stages.
var below = map[string][]string{
	"schemas":                 {"internal/redact"},
	"internal/redact":         {}, // keeps secrets out of files and logs: every stage uses it
	"tokenizer":               {},
	"sim":                     {},
	"internal/cpuset":         {},
	"internal/colocate":       {"internal/cpuset"},
	"internal/hostile":        {}, // a scripted broken server for the wire and end-to-end tests
	"internal/hostclock":      {"schemas"},
	"replay":                  {"schemas", "tokenizer", "internal/hostclock", "internal/redact"},
	"capture/tap":             {},
	"capture/wire":            {"schemas"},
	"capture/internal/worker": {"schemas", "capture/wire", "internal/cpuset", "internal/redact"},
	"capture":                 {"schemas", "capture/wire", "capture/tap", "capture/internal/worker", "internal/cpuset", "internal/colocate", "internal/hostclock", "internal/redact"},
	"aggregate":               {"schemas", "tokenizer"},
	"report":                  {"schemas"},
	"internal/simkit":         {"replay", "schemas", "internal/cpuset"},
	"calibrate":               {"replay", "capture", "aggregate", "schemas", "internal/cpuset", "internal/simkit"},
	"search":                  {"replay", "capture", "aggregate", "schemas"},
	"internal/synthrun":       {"schemas"},
	"bench/scale":             {"internal/synthrun"}, // a benchmark command
	"cmd/wirebench":           nil,                   // the command may import every package
	"internal/layering":       {},
	"internal/doclinks":       {},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestStagesImportOnlyDownstream(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		allowed, known := below[name]
		if !known {
			t.Errorf("package %s is not in the layering table: add it with the packages it may import", name)
			continue
		}
		seen++
		if name == "cmd/wirebench" {
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which is not below it (allowed: %v)", name, dep, allowed)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list found only %d packages of the module", seen)
	}
}
