package compare

import (
	"cmp"
	"math"
	"slices"

	"github.com/wirebench/wirebench/schemas"
)

// StagePair is a stage of NEW (index into its stages) and its partner in BASE.
type StagePair struct {
	Base, New int
	By        string // schemas.PairedByName or schemas.PairedByRate
}

// Pair pairs the stages of NEW with those of BASE: first by name (the k-th stage of a name in
// NEW with the k-th of that name in BASE), then the rest by load (same mode and the same target
// rate, or the same concurrency), in stage order. It returns the pairs in NEW's order and the
// indices of the stages of each run left without a partner.
func Pair(base, new []schemas.Stage) (pairs []StagePair, unmatchedBase, unmatchedNew []int) {
	usedB := make([]bool, len(base))
	pairedN := make([]bool, len(new))
	match := func(by string, same func(b, n *schemas.Stage) bool) {
		for j := range new {
			if pairedN[j] {
				continue
			}
			for i := range base {
				if !usedB[i] && same(&base[i], &new[j]) {
					usedB[i], pairedN[j] = true, true
					pairs = append(pairs, StagePair{Base: i, New: j, By: by})
					break
				}
			}
		}
	}
	match(schemas.PairedByName, func(b, n *schemas.Stage) bool { return n.Name != "" && b.Name == n.Name })
	match(schemas.PairedByRate, sameLoad)
	slices.SortFunc(pairs, func(a, b StagePair) int { return cmp.Compare(a.New, b.New) })
	for i, u := range usedB {
		if !u {
			unmatchedBase = append(unmatchedBase, i)
		}
	}
	for j, p := range pairedN {
		if !p {
			unmatchedNew = append(unmatchedNew, j)
		}
	}
	return pairs, unmatchedBase, unmatchedNew
}

// sameLoad reports whether two stages were planned with the same load: the same mode and
// target rate (within 1e-9 relative) or concurrency.
func sameLoad(b, n *schemas.Stage) bool {
	if b.Mode != n.Mode {
		return false
	}
	if b.Mode == schemas.ModeClosed {
		return b.Concurrency == n.Concurrency
	}
	return math.Abs(b.TargetRate-n.TargetRate) <= 1e-9*math.Max(math.Abs(b.TargetRate), 1)
}
