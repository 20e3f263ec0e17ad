package aggregate

import (
	"context"
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

// TestKeepSamples: with Config.KeepSamples, Run returns the values each stage's intervals were
// drawn from (the hand run's TTFT of every ok request with one, its content-event gaps), and
// without it none.
func TestKeepSamples(t *testing.T) {
	dir := handRun().write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}, Out: t.TempDir(), KeepSamples: true}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	var ttft []int64
	for _, m := range readRequests(t, sum.Out) {
		if m.OK && m.TTFTNs != nil {
			ttft = append(ttft, *m.TTFTNs)
		}
	}
	s := sum.Samples[0]
	for _, c := range []struct {
		name      string
		got, want []int64
		values    int64
	}{
		{"ttft", s["ttft"], ttft, sum.Stages[0].TTFTCI.Values},
		// seq 1's gaps 20 and 10 ms, seq 5's and seq 6's 10 ms
		{"itl", s["itl"], []int64{10 * ms, 10 * ms, 10 * ms, 20 * ms}, sum.Stages[0].ITLCI.Values},
	} {
		got := slices.Sorted(slices.Values(c.got))
		slices.Sort(c.want)
		if len(c.want) < 4 || !slices.Equal(got, c.want) || int64(len(got)) != c.values {
			t.Errorf("%s sample %v (stage counts %d values); want %v", c.name, got, c.values, c.want)
		}
	}
	if sum, err = Run(context.Background(), Config{Runs: []string{dir}, Out: t.TempDir()}, quietLog()); err != nil {
		t.Fatal(err)
	}
	if sum.Samples != nil {
		t.Errorf("without KeepSamples: samples %v; want none", sum.Samples)
	}
}
