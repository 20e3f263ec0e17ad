package replay

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// unknownKey is the message for an unknown key at field ("load.stages[0].arival"): the field,
// and the nearest valid key at that place or, with none near, every valid key there. A
// top-level key is its own field: it is named once.
func unknownKey(field, key string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if field != key {
		msg = field + ": " + msg
	}
	parent := ""
	if i := strings.LastIndex(field, "."); i >= 0 {
		parent = field[:i]
	}
	keys := yamlKeys(reflect.TypeFor[schemas.Config](), parent)
	if len(keys) == 0 {
		return msg
	}
	if near := nearestKey(key, keys); near != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", near)
	}
	return msg + " (valid here: " + strings.Join(keys, ", ") + ")"
}

// yamlKeys returns the YAML keys of the struct at the dotted path ("load.stages[0]") under t, in
// declaration order; nil when the path leads to no struct.
func yamlKeys(t reflect.Type, path string) []string {
	for seg := range strings.SplitSeq(path, ".") {
		if seg, _, _ = strings.Cut(seg, "["); seg == "" || seg == "value" {
			continue
		}
		t = elem(t)
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldByKey(t, seg)
		if !ok {
			return nil
		}
		t = f.Type
	}
	if t = elem(t); t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for f := range t.Fields() {
		if k := yamlKey(f); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// elem strips pointers, slices and arrays: the type a YAML mapping at that place decodes into.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if yamlKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// nearestKey is the key a typo most likely meant: the one at the smallest edit distance, if
// that is at most a third of the typo's length (at least 1), or the one the typo begins
// ("burst" for burstiness); "" when none is near.
func nearestKey(typo string, keys []string) string {
	best, bestD := "", max(1, len(typo)/3)+1
	for _, k := range keys {
		if d := editDistance(typo, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	for _, k := range keys {
		if len(typo) >= 3 && strings.HasPrefix(k, typo) {
			return k
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (insertions, deletions and
// substitutions of bytes, each costing 1).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
