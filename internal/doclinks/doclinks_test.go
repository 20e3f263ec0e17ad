package doclinks

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	goDocRef = regexp.MustCompile(`\b((?:docs|schemas|examples)/[\w./-]+\.md)\b`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
)

// root is the repository root, two levels above this package.
func root(t *testing.T) string {
	abs, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// walk calls f for every file below the root with one of the extensions, skipping hidden and
// generated directories.
func walk(t *testing.T, exts []string, f func(path string)) {
	err := filepath.WalkDir(root(t), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root(t) && (strings.HasPrefix(name, ".") || name == "runs" || name == "bin" || name == "node_modules" || name == "testdata") {
			return filepath.SkipDir
		}
		for _, e := range exts {
			if !d.IsDir() && strings.HasSuffix(name, e) {
				f(p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
func slug(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading anchors of a Markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	fence := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if m := heading.FindStringSubmatch(line); m != nil && !fence {
			out[slug(strings.ReplaceAll(m[1], "`", ""))] = true
		}
	}
	return out
}

func TestMarkdownLinksResolve(t *testing.T) {
	n := 0
	walk(t, []string{".md"}, func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
			}
			rel, _ := filepath.Rel(root(t), path)
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %q: %s does not exist", rel, target, dest)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[frag] {
				t.Errorf("%s: link %q: no heading with anchor #%s in %s", rel, target, frag, filepath.Base(dest))
			}
		}
	})
	if n < 20 {
		t.Fatalf("found only %d relative links: is the walk wrong?", n)
	}
}

func TestGoCommentsNameExistingDocs(t *testing.T) {
	n := 0
	walk(t, []string{".go"}, func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "//") {
				continue
			}
			for _, m := range goDocRef.FindAllStringSubmatch(line, -1) {
				n++
				if _, err := os.Stat(filepath.Join(root(t), m[1])); err != nil {
					rel, _ := filepath.Rel(root(t), path)
					t.Errorf("%s names %s, which does not exist", rel, m[1])
				}
			}
		}
	})
	if n < 5 {
		t.Fatalf("found only %d docs paths in Go comments: is the walk or the pattern wrong?", n)
	}
}
