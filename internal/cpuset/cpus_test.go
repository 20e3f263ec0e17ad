package cpuset

import "testing"

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		isOK bool
	}{
		{"max 100000\n", 0, false},
		{"200000 100000\n", 2, true},
		{"150000 100000", 2, true}, // 1.5 CPUs round up
		{"50000 100000", 1, true},
		{"garbage", 0, false},
	}
	for _, tt := range tests {
		n, ok := parseCPUMax(tt.in)
		if n != tt.n || ok != tt.isOK {
			t.Errorf("parseCPUMax(%q) = (%d, %v); want (%d, %v)", tt.in, n, ok, tt.n, tt.isOK)
		}
	}
}

func TestAllowedWithinHost(t *testing.T) {
	cpus, usable, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if usable < 1 || usable > len(cpus) {
		t.Errorf("Allowed() = (%v, %d); want 1 <= usable <= len(cpus)", cpus, usable)
	}
}
