package worker

import "testing"

func TestConnCap(t *testing.T) {
	tests := []struct {
		maxConns, maxInflight int
		nofile                int64
		want                  int
	}{
		{0, 0, 20000, 20000 - reservedFiles}, // only the open-files limit
		{100, 0, 20000, 100},
		{0, 50, 20000, 50},
		{100, 50, 20000, 50},
		{100000, 0, 1024, 1024 - reservedFiles},
		{0, 0, 10, 1},
	}
	for _, tt := range tests {
		if got := ConnCap(tt.maxConns, tt.maxInflight, tt.nofile); got != tt.want {
			t.Errorf("connCap(%d, %d, %d) = %d; want %d", tt.maxConns, tt.maxInflight, tt.nofile, got, tt.want)
		}
	}
}
