package replay

import "testing"

func TestUnknownKey(t *testing.T) {
	for _, tc := range []struct {
		field, key, want string
	}{
		// one edit from a stage key
		{"load.stages[2].arival", "arival", `load.stages[2].arival: unknown key "arival" (did you mean arrival?)`},
		// top level
		{"lod", "lod", `unknown key "lod" (did you mean load?)`},
		// the start of a longer key
		{"load.sweep.burst", "burst", `load.sweep.burst: unknown key "burst" (did you mean burstiness?)`},
		// under a pointer to a struct
		{"workload.synthetic.input.kinds", "kinds", `workload.synthetic.input.kinds: unknown key "kinds" (did you mean kind?)`},
		// nothing near: every key of the place
		{"bias.zzz", "zzz", `bias.zzz: unknown key "zzz" (valid here: tolerance, tolerance_share, stamp_allowance)`},
		// a path that leads to no struct: the key alone
		{"nowhere.x", "x", `nowhere.x: unknown key "x"`},
	} {
		if got := unknownKey(tc.field, tc.key); got != tc.want {
			t.Errorf("unknownKey(%q, %q) = %q; want %q", tc.field, tc.key, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"arival", "arrival", 1},    // one insertion
		{"rate", "rate", 0},         // equal
		{"", "abc", 3},              // all insertions
		{"kitten", "sitting", 3},    // the textbook pair
		{"duration", "durtaion", 2}, // a swap is two substitutions
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
