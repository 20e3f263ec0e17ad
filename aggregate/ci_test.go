package aggregate

import (
	"slices"
	"testing"
)

// TestCISampleThins: past ciMaxValues the sample keeps every other request, then every fourth,
// and so on (here every eighth of 25 requests of 1 to 3 values under a bound of 10 values):
// whole requests in their order, with their ends.
func TestCISampleThins(t *testing.T) {
	defer func(v int) { ciMaxValues = v }(ciMaxValues)
	ciMaxValues = 10
	c := newCISample()
	for i := range 25 { // request i has i%3+1 gaps, valued 100*i + j
		var vs []int64
		for j := range i%3 + 1 {
			v := int64(100*i + j)
			vs = append(vs, v, v-1, v+1)
		}
		c.addUnit(vs)
	}
	var want []int64
	var units []int
	for i := 0; i < 25; i += int(c.every) {
		units = append(units, len(want))
		for j := range i%3 + 1 {
			want = append(want, int64(100*i+j))
		}
	}
	units = append(units, len(want))
	if c.every != 8 || len(c.vals) > ciMaxValues || !slices.Equal(c.vals, want) || !slices.Equal(c.units, units) {
		t.Fatalf("every %d, values %v, units %v; want every 8, %v, %v", c.every, c.vals, c.units, want, units)
	}
	for i, v := range c.vals {
		if c.lo[i] != v-1 || c.hi[i] != v+1 {
			t.Errorf("value %d: ends [%d, %d]; want [%d, %d]", v, c.lo[i], c.hi[i], v-1, v+1)
		}
	}
}
