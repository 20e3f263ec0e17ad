package schemas

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// JSONFile describes one JSON file of the contract for SCHEMAS.md: its fields come from the Go
// struct's json tags and their meanings from doc tags, like the Parquet kinds' columns.
type JSONFile struct {
	Name    string       // file name, e.g. manifest.json
	Path    string       // where it is written, e.g. RUN/manifest.json
	Doc     string       // what it is and who writes it
	Version string       // how its version is recorded
	Type    reflect.Type // the Go struct
	Notes   string       // Markdown after the field table
}

// JSONFiles are the JSON files of the contract, documented in SCHEMAS.md after the Parquet
// kinds. Each is written atomically (a temporary file, fsync, rename) and indented.
var JSONFiles = []JSONFile{
	{Name: "manifest.json", Path: "RUN/manifest.json", Type: reflect.TypeFor[Manifest](), Notes: outagesNote,
		Doc:     "what the run is, what made it and which files it holds; written by replay, updated by capture and aggregate (a merged run's by aggregate).",
		Version: "`schema_version`, the run files' version: a reader refuses another"},
	{Name: "profile.json", Path: "RUN/report/profile.json", Type: reflect.TypeFor[Profile](),
		Doc:     "the machine-readable latency profile of one or more runs, written by `wirebench report`; durations in ns, rates per second.",
		Version: fmt.Sprintf("`profile_version` (now %d), changed when a field is renamed or removed", ProfileVersion)},
	{Name: "calibration.json", Path: "DIR/calibration.json", Type: reflect.TypeFor[Calibration](),
		Doc:     "the result of `wirebench calibrate -o DIR` (DIR is also a normal run directory); times in ns, rates per second.",
		Version: fmt.Sprintf("`calibration_version` (now %d; absent in files written before it, same layout), changed when a field is renamed or removed", CalibrationVersion)},
	{Name: "search.json", Path: "DIR/search.json", Type: reflect.TypeFor[SearchRecord](),
		Doc:     "the record of `wirebench search CONFIG -o DIR`: every step (each an ordinary run directory DIR/step-NN), its verdict and why its rate was chosen; rewritten after every step; times in ns, rates per second.",
		Version: fmt.Sprintf("`search_version` (now %d), changed when a field is renamed or removed", SearchVersion)},
	{Name: "compare.json", Path: "stdout of wirebench compare --format json BASE NEW", Type: reflect.TypeFor[Comparison](),
		Doc:     "run NEW against the baseline BASE: stage pairs, every latency percentile's change NEW / BASE − 1 with its 95% interval and significance, and the --fail-on gate (docs/design/compare.md); times in ns, changes as shares (+0.05 = 5% higher).",
		Version: fmt.Sprintf("`compare_version` (now %d), changed when a field is renamed or removed", CompareVersion)},
}

// JSONField is one documented field of a JSON file: its dotted path ("stages[].index"), JSON
// type and meaning.
type JSONField struct {
	Path, Type, Doc string
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	durType  = reflect.TypeFor[time.Duration]()
)

// Fields lists the file's fields in struct order, nested objects after their parent.
func (f JSONFile) Fields() []JSONField { return jsonFields(f.Type, "") }

func jsonFields(t reflect.Type, prefix string) []JSONField {
	var out []JSONField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		path := prefix + name
		typ, elem, suffix := jsonType(sf.Type)
		out = append(out, JSONField{Path: path, Type: typ, Doc: sf.Tag.Get("doc")})
		if elem != nil {
			out = append(out, jsonFields(elem, path+suffix+".")...)
		}
	}
	return out
}

// jsonType names t as JSON sees it; for an object (or array or map of objects) it also returns
// the struct to document below it and the path suffix of its elements ("[]", "{}").
func jsonType(t reflect.Type) (string, reflect.Type, string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "string (RFC 3339 time)", nil, ""
	case t == rawType:
		return "object", nil, ""
	case t == durType:
		return "integer (ns)", nil, ""
	}
	switch t.Kind() {
	case reflect.Struct:
		return "object", t, ""
	case reflect.Slice, reflect.Array:
		name, elem, suffix := jsonType(t.Elem())
		return "array of " + name, elem, "[]" + suffix
	case reflect.Map:
		name, elem, suffix := jsonType(t.Elem())
		return "map of " + name, elem, "{}" + suffix
	case reflect.String:
		return "string", nil, ""
	case reflect.Bool:
		return "boolean", nil, ""
	case reflect.Float32, reflect.Float64:
		return "number", nil, ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", nil, ""
	}
	return t.Kind().String(), nil, ""
}

// WriteMarkdown writes the file's section of SCHEMAS.md.
func (f JSONFile) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## %s\n\n`%s`: %s Version: %s.\n\n", f.Name, f.Path, f.Doc, f.Version)
	fmt.Fprintln(w, "| field | type | meaning |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, fd := range f.Fields() {
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", fd.Path, fd.Type, strings.ReplaceAll(fd.Doc, "|", `\|`))
	}
	fmt.Fprintln(w)
	if f.Notes != "" {
		fmt.Fprint(w, f.Notes)
	}
	return nil
}
