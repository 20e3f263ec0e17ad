package doclinks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// qualified is a package-qualified Go name in a comment, such as schemas.Kind or
// worker.Config.Run: the package, the name and an optional field or method.
var qualified = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Z][A-Za-z0-9_]*))?\b`)

// camel is an unqualified name with a hump (StopBelowFidelity, PartRows): in this tree's
// comments such a word is a Go name, unless notGo lists it.
var camel = regexp.MustCompile(`\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b`)

// notGo are the camel-cased words of the tree's comments that are no Go name of the tree.
var notGo = map[string]bool{
	// units, products and formats
	"KiB": true, "MiB": true, "GiB": true, "WxH": true, "OpenAI": true, "DuckDB": true,
	"JavaScript": true, "DevTools": true, "GitHub": true, "DeepSeek": true, "WebSocket": true,
	"ShareGPT": true, "BurstGPT": true, "ByteLevel": true, "QoS": true, "MinIO": true,
	// kernel counters, CSV columns and Kubernetes fields the comments quote
	"ListenOverflows": true, "TcpExt": true, "OutSegs": true, "ContextTokens": true, "GeneratedTokens": true,
	"FailJob": true,
	// names of the standard library
	"ReadFrom": true, "ReadHeaderTimeout": true,
}

// decls holds the names the tree declares: per package name its top-level names, and every
// name declared anywhere (fields, methods and locals included) for the unqualified check.
type decls struct {
	pkgs map[string]map[string]bool
	all  map[string]bool
}

func declared(t *testing.T) (decls, []*ast.File, *token.FileSet) {
	d := decls{pkgs: map[string]map[string]bool{}, all: map[string]bool{}}
	fset := token.NewFileSet()
	var files []*ast.File
	walk(t, []string{".go"}, func(path string) {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		pkg := f.Name.Name
		if d.pkgs[pkg] == nil {
			d.pkgs[pkg] = map[string]bool{}
		}
		for name := range f.Scope.Objects {
			d.pkgs[pkg][name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				d.all[n.Name] = true
			case *ast.FuncDecl:
				if n.Recv != nil {
					d.pkgs[pkg][n.Name.Name] = true
				}
			}
			return true
		})
	})
	return d, files, fset
}

func TestGoCommentsNameExistingIdentifiers(t *testing.T) {
	d, files, fset := declared(t)
	n := 0
	for _, f := range files {
		for _, cg := range f.Comments {
			text := cg.Text()
			pos := fset.Position(cg.Pos())
			rel, _ := filepath.Rel(root(t), pos.Filename)
			for _, m := range qualified.FindAllStringSubmatch(text, -1) {
				names, ok := d.pkgs[m[1]]
				if !ok {
					continue // not a package of the tree (a file name, a standard package)
				}
				n++
				if !names[m[2]] && !d.all[m[2]] {
					t.Errorf("%s:%d: comment names %s.%s, which package %s does not declare", rel, pos.Line, m[1], m[2], m[1])
				}
			}
			for _, w := range camel.FindAllString(text, -1) {
				if strings.Contains(text, "."+w) || d.all[w] || notGo[w] {
					continue
				}
				t.Errorf("%s:%d: comment names %s, which nothing in the tree declares", rel, pos.Line, w)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d qualified names in comments: is the walk or the pattern wrong?", n)
	}
}
