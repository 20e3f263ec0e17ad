package schemas

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		in   string
		want Bytes
		text string // MarshalText of want; empty: an error is wanted
	}{
		{"256MiB", 256 << 20, "256MiB"},
		{"1GiB", 1 << 30, "1GiB"},
		{"1.5GiB", 3 << 29, "1536MiB"},
		{"64KiB", 64 << 10, "64KiB"},
		{"500MB", 500e6, "500000000"}, // decimal units are read, binary ones written
		{"1000", 1000, "1000"},        // plain bytes
		{" 2 MiB ", 2 << 20, "2MiB"},  // spaces around the number and unit
		{"0", 0, "0"},
		{"-1MiB", 0, ""},
		{"lots", 0, ""},
		{"1PiB", 0, ""}, // no such unit
	}
	for _, tt := range tests {
		var b Bytes
		err := b.UnmarshalText([]byte(tt.in))
		if tt.text == "" {
			if err == nil {
				t.Errorf("UnmarshalText(%q) = %d; want an error", tt.in, b)
			}
			continue
		}
		text, _ := b.MarshalText()
		if err != nil || b != tt.want || string(text) != tt.text {
			t.Errorf("UnmarshalText(%q) = %d (%s), %v; want %d (%s)", tt.in, b, text, err, tt.want, tt.text)
		}
	}
}

// Bytes reads from YAML (a size or a number) and round-trips through JSON; a bad size names
// its line.
func TestBytesYAMLJSON(t *testing.T) {
	var c CaptureOptions
	if err := yaml.Unmarshal([]byte("memory_budget: 1GiB\n"), &c); err != nil || c.MemoryBudget != 1<<30 {
		t.Fatalf("yaml memory_budget: 1GiB = %d, %v; want %d", c.MemoryBudget, err, 1<<30)
	}
	if err := yaml.Unmarshal([]byte("workers: 2\nmemory_budget: 1048576\n"), &c); err != nil || c.MemoryBudget != 1<<20 {
		t.Fatalf("yaml memory_budget: 1048576 = %d, %v; want %d", c.MemoryBudget, err, 1<<20)
	}
	if err := yaml.Unmarshal([]byte("workers: 2\nmemory_budget: huge\n"), &c); err == nil {
		t.Error("yaml memory_budget: huge: want an error")
	} else if pe := (*PositionError)(nil); !errors.As(err, &pe) || pe.Line != 2 {
		t.Errorf("yaml memory_budget: huge: %v; want an error at line 2", err)
	}
	b, err := json.Marshal(CaptureOptions{MemoryBudget: 256 << 20})
	if err != nil || string(b) != `{"memory_budget":"256MiB"}` {
		t.Fatalf("json = %s, %v; want memory_budget \"256MiB\"", b, err)
	}
	var back CaptureOptions
	if err := json.Unmarshal(b, &back); err != nil || back.MemoryBudget != 256<<20 {
		t.Errorf("json round trip = %d, %v; want %d", back.MemoryBudget, err, 256<<20)
	}
	if err := json.Unmarshal([]byte(`{"memory_budget":4096}`), &back); err != nil || back.MemoryBudget != 4096 {
		t.Errorf("json number = %d, %v; want 4096", back.MemoryBudget, err)
	}
}
