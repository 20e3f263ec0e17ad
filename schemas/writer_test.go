package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSealThenClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schedule", "prompts.parquet")
	w, err := Create[Prompt](path, Producer{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]Prompt{{PromptID: 1, Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Seal, stat %s = %v; want no file under the final name yet", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadFile[Prompt](path)
	if err != nil || len(rows) != 1 || rows[0].Text != "hello" {
		t.Errorf("after Seal and Close: %v, %v; want the one row", rows, err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp-*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}
