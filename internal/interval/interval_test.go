package interval

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestTooSmall(t *testing.T) {
	for _, c := range []struct {
		q    float64
		n    int
		want bool
	}{
		{0.5, 39, true}, // 19.5 on each side
		{0.5, 40, false},
		{0.9, 199, true},
		{0.9, 200, false},
		{0.99, 1999, true},
		{0.99, 2000, false},
		{0.999, 19999, true},
		{0.999, 20000, false},
	} {
		if got := TooSmall(c.q, c.n); got != c.want {
			t.Errorf("TooSmall(%v, %d) = %v; want %v", c.q, c.n, got, c.want)
		}
	}
}

func TestReplicatesDeterministicAndSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := draw(rng, 3000, 0.5)
	qs := []float64{0.5, 0.99, 0.999}
	a, err := Replicates(Sample{Values: vals}, qs, Options{B: 200, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Replicates(Sample{Values: vals}, qs, Options{B: 200, Seed: 7})
	if !slices.Equal(a.Lo[0], b.Lo[0]) || !slices.Equal(a.Lo[1], b.Lo[1]) {
		t.Errorf("the same seed gave different replicates")
	}
	if len(a.Lo[0]) != 200 || a.Small[0] || a.Small[1] {
		t.Errorf("p50, p99 of 3,000: %d replicates, small %v; want 200, not small", len(a.Lo[0]), a.Small)
	}
	if !a.Small[2] || a.Lo[2] != nil || a.Interval(2, 0).OK {
		t.Errorf("p99.9 of 3,000 values: small %v; want n too small, no replicates, no interval", a.Small[2])
	}
	c, _ := Replicates(Sample{Values: vals}, qs, Options{B: 200, Seed: 8})
	if slices.Equal(a.Lo[0], c.Lo[0]) {
		t.Errorf("seeds 7 and 8 gave the same replicates")
	}
}

// TestReplicatesExact checks the windowed select against a plain sort of each resample: a block
// resample is rebuilt from the same draws and sorted.
func TestReplicatesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := draw(rng, 6000, 0.3)
	for i := range vals {
		vals[i] /= 1e4 // ties
	}
	units := []int{0}
	for units[len(units)-1] < len(vals)-10 {
		units = append(units, units[len(units)-1]+rng.IntN(9)+1)
	}
	units = append(units, len(vals))
	s := Sample{Values: vals, Units: units}
	qs := []float64{0.1, 0.5, 0.95}
	got, err := Replicates(s, qs, Options{B: 50, Seed: 9, BlockLen: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got.Small[0] || got.Small[1] || got.Small[2] {
		t.Fatalf("small %v (deff %v); want intervals for all", got.Small, got.Deff)
	}
	r := newResampler(units, got.BlockLen, 50, 9)
	prng := rand.New(rand.NewPCG(9, 0x626f6f74))
	for j := range 50 {
		r.draw(prng)
		var res []int64
		for _, sg := range r.segs {
			res = append(res, vals[sg[0]:sg[1]]...)
		}
		slices.Sort(res)
		for i, q := range qs {
			if want := res[NearestRank(q, len(res))-1]; got.Lo[i][j] != want {
				t.Errorf("replicate %d of q%v = %d; want %d", j, q, got.Lo[i][j], want)
			}
		}
	}
}

// TestBoundsCombine: with client-error ends, the interval runs from the lower ends' low point to
// the upper ends' high point, and holds the sample's own percentile bounds.
func TestBoundsCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := draw(rng, 4000, 0)
	lo, hi := make([]int64, len(vals)), make([]int64, len(vals))
	for i, v := range vals {
		lo[i], hi[i] = v-1000, v+3000
	}
	qs := []float64{0.5, 0.99}
	plain, _ := Intervals(Sample{Values: vals}, qs, Options{B: 300, Seed: 1})
	both, err := Intervals(Sample{Values: vals, Lo: lo, Hi: hi}, qs, Options{B: 300, Seed: 1, BlockLen: 1})
	if err != nil {
		t.Fatal(err)
	}
	plain1, _ := Intervals(Sample{Values: vals}, qs, Options{B: 300, Seed: 1, BlockLen: 1})
	for i := range qs {
		if both[i].Lo != plain1[i].Lo-1000 || both[i].Hi != plain1[i].Hi+3000 {
			t.Errorf("q%v: bounded %+v; want the plain %+v shifted by -1000 and +3000", qs[i], both[i], plain1[i])
		}
		if !plain[i].OK || plain[i].Lo > plain[i].Hi {
			t.Errorf("q%v: %+v; want an interval", qs[i], plain[i])
		}
	}
}

func TestChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	base := draw(rng, 5000, 0)
	slower := make([]int64, len(base))
	for i, v := range draw(rng, 5000, 0) {
		slower[i] = v * 12 / 10
	}
	qs := []float64{0.5}
	bb, _ := Replicates(Sample{Values: base}, qs, Options{B: 400, Seed: 1})
	nb, _ := Replicates(Sample{Values: slower}, qs, Options{B: 400, Seed: 1})
	lo, hi, ok := Change(bb, nb, 0, 0)
	if !ok || lo > 0.2 || hi < 0.2 || lo <= 0.1 {
		t.Errorf("Change of a 20%% slower run = [%.3f, %.3f] %v; want around 0.2, above 0.1", lo, hi, ok)
	}
}

func TestMalformed(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Sample
		qs   []float64
		want error
	}{
		{"q of 1", Sample{Values: []int64{1}}, []float64{1}, ErrQ},
		{"only Lo", Sample{Values: []int64{1}, Lo: []int64{1}}, []float64{0.5}, ErrBounds},
		{"short Hi", Sample{Values: []int64{1, 2}, Lo: []int64{1, 2}, Hi: []int64{1}}, []float64{0.5}, ErrBounds},
		{"units short of the end", Sample{Values: []int64{1, 2}, Units: []int{0, 1}}, []float64{0.5}, ErrUnits},
		{"units falling", Sample{Values: []int64{1, 2}, Units: []int{0, 2, 1, 2}}, []float64{0.5}, ErrUnits},
	} {
		if _, err := Replicates(c.s, c.qs, Options{}); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
}

func TestBlockLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	iid := make([]float64, 5000)
	ar := make([]float64, 5000)
	z := 0.0
	for i := range iid {
		iid[i] = rng.NormFloat64()
		z = 0.8*z + rng.NormFloat64()
		ar[i] = z
	}
	if b := BlockLength(iid); b > 3 {
		t.Errorf("BlockLength(iid) = %d; want at most 3", b)
	}
	// For AR(1) with ρ = 0.8 the optimal circular block length is (2G²/D)^(1/3)·n^(1/3) with
	// G/γ(0) = 2ρ/(1−ρ)², D = (4/3)·((1+ρ)/(1−ρ))²·γ(0)²: about 53 at n = 5,000.
	if b := BlockLength(ar); b < 30 || b > 80 {
		t.Errorf("BlockLength(AR(1) 0.8) = %d; want about 53", b)
	}
}

// TestMinBlockLen: the floor lengthens an automatic block (independent values get 1 without
// it), never a given one, and a floor over an eighth of the units leaves no interval.
func TestMinBlockLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	vals := make([]int64, 1000) // MaxBlocks makes blocks of at least ⌈1000/256⌉ = 4
	for i := range vals {
		vals[i] = rng.Int64N(1000)
	}
	qs := []float64{0.5}
	for _, tt := range []struct {
		o     Options
		block int
		ok    bool
	}{
		{Options{B: 50}, -1, true},
		{Options{B: 50, MinBlockLen: 40}, 40, true},
		{Options{B: 50, MinBlockLen: 40, BlockLen: 5}, 5, true},
		{Options{B: 50, MinBlockLen: 200}, 200, false},
	} {
		b, err := Replicates(Sample{Values: vals}, qs, tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if tt.block < 0 && b.BlockLen > 4 || tt.block >= 0 && b.BlockLen != tt.block {
			t.Errorf("%+v: block length %d; want %d (-1: automatic, at most 4)", tt.o, b.BlockLen, tt.block)
		}
		if b.Interval(0, 0).OK != tt.ok {
			t.Errorf("%+v: interval given %v; want %v", tt.o, !tt.ok, tt.ok)
		}
	}
}
