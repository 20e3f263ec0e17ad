package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

var update = flag.Bool("update", false, "rewrite golden files and SCHEMAS.md")

func TestGoldenSchemas(t *testing.T) {
	for _, k := range Kinds {
		var b bytes.Buffer
		if err := k.WriteGolden(&b); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", k.Name+".schema")
		if *update {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./schemas -update)", golden, err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s is stale; schema now:\n%s", golden, b.String())
		}
	}
}

func TestSchemasMarkdownFresh(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSchemasMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("SCHEMAS.md", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("SCHEMAS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Error("schemas/SCHEMAS.md is stale: run go test ./schemas -update")
	}
}

func TestEveryColumnDocumented(t *testing.T) {
	for _, k := range Kinds {
		for _, c := range k.Columns() {
			if c.Doc == "" {
				t.Errorf("%s.%s has no doc tag", k.Name, c.Name)
			}
			if strings.HasSuffix(c.Name, "_ns") && c.Type != "INT64" && c.Type != "DOUBLE" {
				t.Errorf("%s.%s ends in _ns but is %s", k.Name, c.Name, c.Type)
			}
		}
	}
}

// fill sets every field of v to a distinct non-zero value so a round trip that drops or swaps a
// column is caught.
func fill(v reflect.Value, n *int64) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Int32, reflect.Int64:
		*n++
		v.SetInt(*n)
	case reflect.Float64:
		*n++
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		*n++
		v.SetString("s" + strings.Repeat("x", int(*n%7)))
	}
}

func roundTrip[T any](t *testing.T, dir string) {
	t.Helper()
	var rows [3]T
	var n int64
	for i := range rows {
		fill(reflect.ValueOf(&rows[i]).Elem(), &n)
	}
	kind := KindOf[T]()
	path := filepath.Join(dir, kind.Name+".parquet")
	if err := WriteFile(path, rows[:], Producer{Command: "test", Args: []string{"--x"}}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile[T](path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows[:]) {
		t.Errorf("%s round trip:\n got %+v\nwant %+v", kind.Name, got, rows)
	}
	f, err := Open[T](path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Command != "test" {
		t.Errorf("%s command metadata = %q; want test", kind.Name, f.Command)
	}
}

func TestRoundTripEveryKind(t *testing.T) {
	dir := t.TempDir()
	roundTrip[ScheduleRequest](t, dir)
	roundTrip[Prompt](t, dir)
	roundTrip[RawRequest](t, dir)
	roundTrip[RawChunk](t, dir)
	roundTrip[RawSegment](t, dir)
	roundTrip[Worker](t, dir)
	roundTrip[ServerMetric](t, dir)
	roundTrip[MetricRequest](t, dir)
	roundTrip[Stage](t, dir)
	roundTrip[Breakdown](t, dir)
	roundTrip[Timeseries](t, dir)
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(Kinds) {
		t.Errorf("dir holds %d entries; want %d (no temporary files left)", len(entries), len(Kinds))
	}
}

func TestWrongVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.parquet")
	f, _ := os.Create(path)
	err := parquet.Write(f, []Prompt{{PromptID: 1}},
		parquet.KeyValueMetadata(MetaVersion, "0"), parquet.KeyValueMetadata(MetaKind, "prompts"))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile[Prompt](path)
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("ReadFile(version 0) error = %v; want ErrVersion", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "version 0") {
		t.Errorf("error %q should name the file and both versions", err)
	}
}

func TestWrongKind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.parquet")
	if err := WriteFile(path, []Prompt{{PromptID: 1}}, Producer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile[RawChunk](path); !errors.Is(err, ErrKind) {
		t.Fatalf("ReadFile[RawChunk](prompts file) error = %v; want ErrKind", err)
	}
}

func TestTruncatedFileRejected(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.parquet")
	rows := make([]RawChunk, 1000)
	for i := range rows {
		rows[i].Seq = int64(i)
	}
	if err := WriteFile(path, rows, Producer{}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, cut := range []int{len(b) - 1, len(b) / 2, 10, 0} {
		if err := os.WriteFile(path, b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile[RawChunk](path)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("ReadFile(cut at %d of %d) error = %v; want ErrCorrupt", cut, len(b), err)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the file", err)
		}
	}
}

func TestAbortLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.parquet")
	w, err := Create[Worker](path, Producer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]Worker{{Worker: 1}}); err != nil {
		t.Fatal(err)
	}
	// Before Close, as after a crash, nothing is under the final name.
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("final name exists before Close: %v", err)
	}
	w.Abort()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("after Abort dir holds %v; want nothing", entries)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), ManifestName)
	m := &Manifest{RunID: "r1", Host: "h", CPUs: 2, ClockSource: "CLOCK_REALTIME", Status: StatusComplete,
		Config: []byte(`{"seed":1}`),
		Stages: []StageInfo{{Index: 0, Name: "s0", Mode: "open", Rate: 20, DurationNs: 5e9, Requests: 100}},
		Files:  []FileEntry{{Path: "raw/requests-w00-0000.parquet", Kind: "raw-requests", Rows: 100}},
		Clock: &Clock{Source: "adjtimex", Synchronized: true, State: "TIME_OK", Status: 1, MaxErrorNs: 1_250_000, EstErrorNs: 41_000,
			BootID: "b", ReadAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
		Shard: "1/3", ShardPlanned: map[int32]int64{0: 34, 1: 80},
		Hosts:              []Host{{Dir: "hosts/a", Host: "a", Shard: "0/3", Status: StatusComplete, Requests: 114, Clock: &Clock{Source: "adjtimex", Error: "adjtimex: x"}}},
		ClockUncertaintyNs: 2_500_000,
	}
	m.AddFile(FileEntry{Path: "raw/requests-w00-0000.parquet", Kind: "raw-requests", Rows: 101})
	if err := m.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, got.Config)
	got.Config = compact.Bytes()
	if !reflect.DeepEqual(got, m) {
		t.Errorf("manifest round trip:\n got %+v\nwant %+v", got, m)
	}
	if len(got.Files) != 1 || got.Files[0].Rows != 101 {
		t.Errorf("AddFile did not replace the entry: %+v", got.Files)
	}
	os.WriteFile(path, []byte(`{"schema_version":99}`), 0o644)
	if _, err := ReadManifest(path); !errors.Is(err, ErrVersion) {
		t.Errorf("ReadManifest(version 99) = %v; want ErrVersion", err)
	}
}

// TestRowGroupsBounded checks that a large file is cut into row groups of at most RowGroupRows,
// so the writer never holds a whole file in memory.
func TestRowGroupsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.parquet")
	w, err := Create[RawChunk](path, Producer{})
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]RawChunk, 1000)
	const total = 3*RowGroupRows + 5
	for n := 0; n < total; n += len(batch) {
		k := min(len(batch), total-n)
		for i := range batch[:k] {
			batch[i].Seq = int64(n + i)
		}
		if err := w.Write(batch[:k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open[RawChunk](path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	groups := f.RowGroups()
	if len(groups) != 4 {
		t.Errorf("row groups = %d; want 4 for %d rows", len(groups), total)
	}
	for i, g := range groups {
		if g.NumRows() > RowGroupRows {
			t.Errorf("row group %d holds %d rows; want at most %d", i, g.NumRows(), RowGroupRows)
		}
	}
	if f.NumRows() != total {
		t.Errorf("rows = %d; want %d", f.NumRows(), total)
	}
}

func TestPartPathsRoundTrip(t *testing.T) {
	for _, k := range Kinds {
		if !k.Rolled() {
			if _, _, _, ok := ParsePartPath(k.Path); ok {
				t.Errorf("%s: ParsePartPath(%q) ok for a kind that is not rolled", k.Name, k.Path)
			}
			continue
		}
		p := k.PartPath(7, 123)
		got, w, n, ok := ParsePartPath(p)
		wantW := 7
		if !strings.Contains(k.Path, "NN") {
			wantW = 0
		}
		if !ok || got.Name != k.Name || w != wantW || n != 123 {
			t.Errorf("ParsePartPath(%q) = (%s, %d, %d, %v); want (%s, %d, 123, true)", p, got.Name, w, n, ok, k.Name, wantW)
		}
	}
	if got := KindOf[RawRequest]().PartPath(3, 12); got != "raw/requests-w03-0012.parquet" {
		t.Errorf("PartPath = %q", got)
	}
	for _, bad := range []string{"raw/requests-w3-0012.parquet", "raw/requests-w03-0012.parquet.tmp", "raw/other-w03-0012.parquet"} {
		if _, _, _, ok := ParsePartPath(bad); ok {
			t.Errorf("ParsePartPath(%q) ok", bad)
		}
	}
}

func TestGlobFindsOnlyParts(t *testing.T) {
	dir := t.TempDir()
	k := KindOf[RawChunk]()
	os.MkdirAll(filepath.Join(dir, "raw"), 0o755)
	for _, name := range []string{k.PartPath(0, 1), k.PartPath(1, 0), "raw/chunks-w01-0000.parquet.tmp", "raw/requests-w00-0000.parquet"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := k.Glob(dir)
	if len(got) != 2 || got[0] != filepath.Join(dir, k.PartPath(0, 1)) || got[1] != filepath.Join(dir, k.PartPath(1, 0)) {
		t.Errorf("Glob = %v", got)
	}
	if got := k.Glob(dir + "/"); len(got) != 2 { // a run directory typed with its trailing slash
		t.Errorf("Glob(%q) = %v; want the 2 parts", dir+"/", got)
	}
}

func TestJSONFieldsNestAndName(t *testing.T) {
	type inner struct {
		A int `json:"a" doc:"an a"`
	}
	type outer struct {
		T  time.Time        `json:"t" doc:"when"`
		In []inner          `json:"in,omitempty" doc:"list"`
		M  map[string]inner `json:"m" doc:"by name"`
		P  *inner           `json:"p" doc:"maybe"`
		X  int              `json:"-"`
	}
	got := JSONFile{Type: reflect.TypeFor[outer]()}.Fields()
	want := []JSONField{{"t", "string (RFC 3339 time)", "when"}, {"in", "array of object", "list"}, {"in[].a", "integer", "an a"},
		{"m", "map of object", "by name"}, {"m{}.a", "integer", "an a"}, {"p", "object", "maybe"}, {"p.a", "integer", "an a"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fields =\n%v\nwant\n%v", got, want)
	}
}

// The error_kind column names every documented error kind, and each kind is documented once.
func TestErrorKindsDocumented(t *testing.T) {
	doc := ""
	for _, c := range KindOf[RawRequest]().Columns() {
		if c.Name == "error_kind" {
			doc = c.Doc
		}
	}
	seen := map[string]bool{}
	for _, k := range ErrorKinds {
		if seen[k.Kind] {
			t.Errorf("error kind %q documented twice", k.Kind)
		}
		seen[k.Kind] = true
		if !strings.Contains(doc, k.Kind) || k.Doc == "" {
			t.Errorf("error kind %q: raw-requests error_kind doc %q does not name it, or its doc is empty", k.Kind, doc)
		}
	}
	if len(ErrorKinds) != 16 {
		t.Errorf("%d error kinds documented; want the 16 constants", len(ErrorKinds))
	}
}

func TestJSONFilesDocumentEveryField(t *testing.T) {
	for _, f := range JSONFiles {
		for _, fd := range f.Fields() {
			if fd.Doc == "" {
				t.Errorf("%s: field %s has no doc tag", f.Name, fd.Path)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in     string
		i, n   int
		hasErr bool
	}{
		{"0/1", 0, 1, false},
		{"2/3", 2, 3, false},
		{"3/3", 0, 0, true}, // i must be < n
		{"1", 0, 0, true},   // no slash
		{"a/2", 0, 0, true},
		{"0/0", 0, 0, true},
	}
	for _, tt := range tests {
		i, n, err := ParseShard(tt.in)
		if i != tt.i || n != tt.n || (err != nil) != tt.hasErr {
			t.Errorf("ParseShard(%q) = (%d, %d, %v); want (%d, %d, error %v)", tt.in, i, n, err, tt.i, tt.n, tt.hasErr)
		}
	}
}
