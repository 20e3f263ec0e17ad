package replay

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// sampler draws token lengths from a Dist, clipped to [min, max].
type sampler struct {
	d      schemas.LengthDist
	mu, sg float64 // lognormal parameters of the logarithm
	vals   []int   // empirical values
	cum    []float64
}

func newSampler(d schemas.LengthDist) (*sampler, error) {
	if d.Min == 0 {
		d.Min = 1
	}
	s := &sampler{d: d}
	switch d.Kind {
	case schemas.DistLognormal:
		// For lengths with mean m and std s: σ² = ln(1 + s²/m²), μ = ln m − σ²/2.
		s.sg = math.Sqrt(math.Log(1 + d.Std*d.Std/(d.Mean*d.Mean)))
		s.mu = math.Log(d.Mean) - s.sg*s.sg/2
	case schemas.DistEmpirical:
		if err := s.readHistogram(d.File); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readHistogram reads a CSV "tokens,count" histogram (header first).
func (s *sampler) readHistogram(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("empirical histogram: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header := true
	total := 0.0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if header {
			header = false
			if len(rec) < 2 || strings.TrimSpace(rec[0]) != "tokens" || strings.TrimSpace(rec[1]) != "count" {
				return fmt.Errorf("%s:%d: header: want \"tokens,count\", got %q", path, line, strings.Join(rec, ","))
			}
			continue
		}
		if len(rec) != 2 {
			return fmt.Errorf("%s:%d: want 2 fields (tokens,count), got %d", path, line, len(rec))
		}
		v, err := strconv.Atoi(strings.TrimSpace(rec[0]))
		if err != nil || v <= 0 || v > MaxLength {
			return fmt.Errorf("%s:%d: tokens: %q is not an integer in 1..%d", path, line, rec[0], MaxLength)
		}
		c, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil || c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Errorf("%s:%d: count: %q is not a number >= 0", path, line, rec[1])
		}
		total += c
		s.vals = append(s.vals, v)
		s.cum = append(s.cum, total)
	}
	if total <= 0 {
		return fmt.Errorf("%s: histogram has no positive counts", path)
	}
	return nil
}

// draw returns one length.
func (s *sampler) draw(r *rand.Rand) int {
	d := &s.d
	var x float64
	switch d.Kind {
	case schemas.DistFixed:
		x = float64(d.Value)
	case schemas.DistUniform:
		return d.Min + r.IntN(d.Max-d.Min+1)
	case schemas.DistNormal:
		x = d.Mean + d.Std*r.NormFloat64()
	case schemas.DistLognormal:
		x = math.Exp(s.mu + s.sg*r.NormFloat64())
	case schemas.DistExponential:
		x = d.Mean * r.ExpFloat64()
	case schemas.DistEmpirical:
		u := r.Float64() * s.cum[len(s.cum)-1]
		i := sort.SearchFloat64s(s.cum, u)
		if i >= len(s.vals) {
			i = len(s.vals) - 1
		}
		x = float64(s.vals[i])
	}
	n := int(math.Round(x))
	if n < d.Min {
		n = d.Min
	}
	if d.Max > 0 && n > d.Max {
		n = d.Max
	}
	return min(n, MaxLength) // a lognormal's or an exponential's tail, without max
}
