package aggregate

import "testing"

// TestTapJoin builds the index from hand-made segments: two connections on one port (reuse),
// a server ISN that wraps around 2^32, a retransmission, and data seen before any handshake.
func TestTapJoin(t *testing.T) {
	var isnRx uint32 = 0xffff_fff0 // stream byte 15 is at seq 0 after the wrap
	segs := []rawSeg{
		{ns: 50, tx: false, port: 9, seq: 7, len: 10}, // before any handshake: dropped
		{ns: 100, tx: true, port: 9, seq: 1000, syn: true},
		{ns: 101, tx: false, port: 9, seq: isnRx, syn: true, ack: true},
		{ns: 110, tx: true, port: 9, seq: 1001, len: 300},       // request: stream bytes [0, 300)
		{ns: 200, tx: false, port: 9, seq: isnRx + 1, len: 20},  // [0, 20), crosses the wrap
		{ns: 300, tx: false, port: 9, seq: isnRx + 21, len: 30}, // [20, 50)
		{ns: 250, tx: false, port: 9, seq: isnRx + 21, len: 30}, // the same bytes earlier: the first arrival counts
		{ns: 1000, tx: true, port: 9, seq: 5000, syn: true},     // port reused
		{ns: 1001, tx: false, port: 9, seq: 70, syn: true, ack: true},
		{ns: 1100, tx: false, port: 9, seq: 71, len: 5}, // [0, 5) of the second connection
	}
	ix := buildTap(segs)
	c1, c2 := ix.conn(9, 150), ix.conn(9, 1050)
	if c1 == nil || c2 == nil || c1 == c2 || ix.conn(9, 99) != nil || ix.conn(8, 150) != nil {
		t.Fatalf("conn lookup: %p %p, before the first SYN %p, other port %p", c1, c2, ix.conn(9, 99), ix.conn(8, 150))
	}
	tests := []struct {
		name string
		segs []tapSeg
		end  int64
		want int64
		ok   bool
	}{
		{"request's last byte", c1.tx, 300, 110, true},
		{"a byte past the request", c1.tx, 301, 0, false},
		{"first response byte", c1.rx, 1, 200, true},
		{"byte 19, across the wrap", c1.rx, 20, 200, true},
		{"byte 20: the retransmitted range, earliest copy", c1.rx, 21, 250, true},
		{"byte 49", c1.rx, 50, 250, true},
		{"byte 50: not seen", c1.rx, 51, 0, false},
		{"second connection's byte 4", c2.rx, 5, 1100, true},
	}
	for _, tt := range tests {
		got, ok := at(tt.segs, tt.end)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: at(%d) = %d, %v; want %d, %v", tt.name, tt.end, got, ok, tt.want, tt.ok)
		}
	}
}
