package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

var ws = tokenizer.Whitespace{}

// readers reads every format by name so the fixtures can share one table.
var readers = map[string]func(path string) (int, error){
	"sharegpt": func(p string) (int, error) { r, err := readShareGPT(p, false, false, ws); return len(r), err },
	"jsonl":    func(p string) (int, error) { r, err := readJSONL(p, true, ws); return len(r), err },
	"csv": func(p string) (int, error) {
		r, err := readCSV(p, "prompt", "max_tokens", "image", ws)
		return len(r), err
	},
	"azure":    func(p string) (int, error) { r, err := readAzure(p); return len(r), err },
	"burstgpt": func(p string) (int, error) { r, err := readBurstGPT(p); return len(r), err },
	"mooncake": func(p string) (int, error) { r, err := readMooncake(p); return len(r), err },
	"hist": func(p string) (int, error) {
		s, err := newSampler(schemas.LengthDist{Kind: "empirical", File: p})
		if err != nil {
			return 0, err
		}
		return len(s.vals), nil
	},
}

func TestFormatFixtures(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		rows         int      // for good files
		want         []string // error substrings: file:line and field
	}{
		{"sharegpt", "good.json", 2, nil}, // conversation b has no question: skipped
		{"sharegpt", "truncated.json", 0, []string{"truncated.json:5:", "truncated"}},
		{"sharegpt", "wrongtype.json", 0, []string{"wrongtype.json:7:", "[1].conversations.value", "want a string"}},
		{"sharegpt", "missing.json", 0, []string{"missing.json:2:", "[0].conversations: missing"}},
		{"jsonl", "good.jsonl", 3, nil},
		{"jsonl", "truncated.jsonl", 0, []string{"truncated.jsonl:2:", "invalid JSON"}},
		{"jsonl", "wrongtype.jsonl", 0, []string{"wrongtype.jsonl:2:", "max_tokens", "want an integer"}},
		{"jsonl", "missing.jsonl", 0, []string{"missing.jsonl:2:", "prompt: missing"}},
		{"csv", "good.csv", 3, nil},
		{"csv", "wrongtype.csv", 0, []string{"wrongtype.csv:3:", `max_tokens: "many"`}},
		{"csv", "truncated.csv", 0, []string{"truncated.csv:3:", "wrong number of fields"}},
		{"csv", "nocolumn.csv", 0, []string{"nocolumn.csv:1:", `no "prompt" column`}},
		{"azure", "good.csv", 3, nil},
		{"azure", "wrongtype.csv", 0, []string{"wrongtype.csv:3:", `ContextTokens: "lots"`}},
		{"azure", "truncated.csv", 0, []string{"truncated.csv:3:", "wrong number of fields"}},
		{"azure", "badtime.csv", 0, []string{"badtime.csv:3:", `TIMESTAMP: "yesterday"`}},
		{"burstgpt", "good.csv", 2, nil}, // the failed request (0 response tokens) is skipped
		{"burstgpt", "session.csv", 2, nil},
		{"burstgpt", "wrongtype.csv", 0, []string{"wrongtype.csv:3:", `Response tokens: "-3"`}},
		{"burstgpt", "truncated.csv", 0, []string{"truncated.csv:3:", "wrong number of fields"}},
		{"mooncake", "good.jsonl", 3, nil},
		{"mooncake", "truncated.jsonl", 0, []string{"truncated.jsonl:2:", "invalid JSON"}},
		{"mooncake", "wrongtype.jsonl", 0, []string{"wrongtype.jsonl:2:", "input_length", "want an integer"}},
		{"mooncake", "missing.jsonl", 0, []string{"missing.jsonl:2:", "output_length: missing"}},
		{"hist", "good.csv", 2, nil},
		{"hist", "wrongtype.csv", 0, []string{"wrongtype.csv:3:", `count: "x"`}},
		{"hist", "truncated.csv", 0, []string{"truncated.csv:3:", "want 2 fields"}},
		{"hist", "header.csv", 0, []string{"header.csv:1:", "header"}},
	} {
		path := filepath.Join("testdata", tc.format, tc.file)
		n, err := readers[tc.format](path)
		if tc.want == nil {
			if err != nil || n != tc.rows {
				t.Errorf("read %s %s = %d rows, %v; want %d rows", tc.format, path, n, err, tc.rows)
			}
			continue
		}
		if err == nil {
			t.Errorf("read %s %s: no error; want %q", tc.format, path, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("read %s %s: error %q; want it to contain %q", tc.format, path, err, w)
			}
		}
	}
}

func TestShareGPTRows(t *testing.T) {
	rows, err := readShareGPT("testdata/sharegpt/good.json", false, false, ws)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rows[0].text, "What is light made of?"; got != want {
		t.Errorf("first prompt = %q; want %q", got, want)
	}
	if got, want := rows[0].output, int32(6); got != want {
		t.Errorf("first max_tokens = %d; want %d (the answer's tokens)", got, want)
	}
	whole, err := readShareGPT("testdata/sharegpt/good.json", true, true, ws)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := whole[0].text, "And colours?"; got != want {
		t.Errorf("whole conversation: last prompt = %q; want %q", got, want)
	}
	if got := whole[0].msgs; !strings.Contains(got, `"role":"assistant","content":"Rays of different`) {
		t.Errorf("whole conversation: messages = %s; want the earlier answer as an assistant message", got)
	}
	if got, want := whole[0].input, int32(5+6+2); got != want {
		t.Errorf("whole conversation: input tokens = %d; want %d", got, want)
	}
	if got := whole[1].msgs; got != `[{"role":"system","content":"Be brief."}]` {
		t.Errorf("system turn: messages = %s", got)
	}
}

// repoRoot finds the repository root (the directory with go.mod) from the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// realTraces returns the shared traces directory, or skips when it is absent.
func realTraces(t *testing.T) string {
	dir := filepath.Join(repoRoot(t), "..", "shared", "data", "traces")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real traces not found at %s (../shared/data/traces from the repository root): %v", dir, err)
	}
	return dir
}

func TestRealTraces(t *testing.T) {
	dir := realTraces(t)
	for _, tc := range []struct {
		format, file string
		rows         int
	}{
		{"azure", "azure-llm-2023-conv.csv", 19366}, // the README says 19,365; the file has 19,366 rows (no final newline),
		{"azure", "azure-llm-2023-code.csv", 8819},
		{"mooncake", "mooncake-conversation.jsonl", 12031},
		{"mooncake", "mooncake-synthetic.jsonl", 3993},
	} {
		n, err := readers[tc.format](filepath.Join(dir, tc.file))
		if err != nil || n != tc.rows {
			t.Errorf("read %s %s = %d rows, %v; want %d", tc.format, tc.file, n, err, tc.rows)
		}
	}
}
