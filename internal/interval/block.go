package interval

import "math"

// BlockLength returns the block length for a circular block bootstrap of series x by the
// automatic rule of Politis & White (2004) with the correction of Patton, Politis & White
// (2009): b = (2·G²/D)^(1/3)·n^(1/3), where, with R(k) the sample autocovariances and λ the
// flat-top window (1 up to |t| = 1/2, then falling linearly to 0 at |t| = 1),
//
//	G = Σ_{|k|≤M} λ(k/M)·|k|·R(k),  D = (4/3)·(Σ_{|k|≤M} λ(k/M)·R(k))²,
//
// and M = 2·m̂, m̂ the smallest lag after which K_N = max(5, ⌈√log10 n⌉) autocorrelations in a
// row are within ±2·√(log10 n / n) (Politis 2003), M at most ⌈√n⌉ + K_N. The result lies in
// [1, ⌈min(3√n, n/3)⌉]. An uncorrelated series gets 1.
func BlockLength(x []float64) int {
	b, _ := politisWhite(x)
	return b
}

// politisWhite returns BlockLength(x) and the series' long-run variance over its variance,
// τ = Σ_{|k|≤M} λ(k/M)·R(k) / R(0) (at least 1): a sample of n such values carries about as
// much information on the mean as n/τ independent ones.
func politisWhite(x []float64) (int, float64) {
	n := len(x)
	if n < 4 {
		return 1, 1
	}
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	c := make([]float64, n)
	for i, v := range x {
		c[i] = v - mean
	}
	acov := func(k int) float64 {
		var s float64
		for t := 0; t+k < n; t++ {
			s += c[t] * c[t+k]
		}
		return s / float64(n)
	}
	r0 := acov(0)
	if r0 <= 0 {
		return 1, 1
	}
	kn := max(5, int(math.Ceil(math.Sqrt(math.Log10(float64(n))))))
	mmax := int(math.Ceil(math.Sqrt(float64(n)))) + kn
	thr := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	r := []float64{r0}
	mhat, run := mmax, 0
	for k := 1; k < n && k <= mmax+kn; k++ {
		r = append(r, acov(k))
		if math.Abs(r[k]/r0) >= thr {
			run = 0
			continue
		}
		if run++; run == kn {
			mhat = k - kn
			break
		}
	}
	m := min(2*mhat, mmax, len(r)-1)
	var g, s0 float64 = 0, r0
	for k := 1; k <= m; k++ {
		l := flatTop(float64(k) / float64(m))
		g += 2 * l * float64(k) * r[k]
		s0 += 2 * l * r[k]
	}
	tau := max(1, s0/r0)
	d := 4.0 / 3 * s0 * s0
	if g == 0 || d <= 0 {
		return 1, tau
	}
	b := math.Cbrt(2*g*g/d) * math.Cbrt(float64(n))
	bmax := math.Ceil(min(3*math.Sqrt(float64(n)), float64(n)/3))
	return int(max(1, min(math.Ceil(b), bmax))), tau
}

func flatTop(t float64) float64 {
	t = math.Abs(t)
	switch {
	case t <= 0.5:
		return 1
	case t <= 1:
		return 2 * (1 - t)
	}
	return 0
}

// dependence returns, for each point p, the block length and the design effect of the sample
// around p. Both come from the series, per unit with values, of y = k − q·g: its count k of
// values at or below p less q times its g values (q the share of all values at or below p). A
// resample's quantile lies above p when its sum of y is negative, so the spread of that sum
// decides the replicates'. The design effect is that sum's variance, u·γ(0)·τ (γ(0) the series'
// variance, τ its long-run ratio, see politisWhite), over n·q(1−q), its variance were the n
// values independent: n over it is the sample's effective size. Ungrouped, it is τ of the
// indicator 1{X ≤ p}.
func dependence(e *end, units []int, points []int64) (bs []int, deffs []float64) {
	y := make([]float64, 0, len(units)-1)
	g := make([]float64, 0, len(units)-1)
	n := float64(len(e.vals))
	for _, p := range points {
		y, g = y[:0], g[:0]
		below := 0
		for i := range len(units) - 1 {
			vals := e.vals[units[i]:units[i+1]]
			if len(vals) == 0 {
				continue
			}
			k := 0
			for _, v := range vals {
				if v <= p {
					k++
				}
			}
			below += k
			y, g = append(y, float64(k)), append(g, float64(len(vals)))
		}
		q := float64(below) / n
		for i := range y {
			y[i] -= q * g[i]
		}
		b, tau := politisWhite(y)
		deff := 1.0
		if q > 0 && q < 1 {
			deff = max(1, float64(len(y))*variance(y)*tau/(n*q*(1-q)))
		}
		bs, deffs = append(bs, b), append(deffs, deff)
	}
	return bs, deffs
}

func variance(x []float64) float64 {
	var m, s float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x))
}
