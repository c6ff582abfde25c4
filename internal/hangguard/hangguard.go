package hangguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
)

// Check reports, through t.Errorf, every use of the constructor pkg.New
// (pkg is the client package's name as the tests import it: "pep",
// "authzen"), called or not, in the *_test.go files of dir (a package's
// tests run in its directory: "."), except in the functions named in
// exempt, the helper among them, each with the reason it may use the
// constructor itself, and in the files named in skip (examples show the
// production defaults; benchmarks measure them). A name of exempt that no
// file defines is reported too, so that the list cannot outlive what it
// excuses. It fails t at once when dir holds no test file or one does not
// parse. Build constraints are ignored: every file is read.
func Check(t testing.TB, dir, pkg string, exempt map[string]string, skip ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("hangguard: no test files in %s (%v)", dir, err)
	}
	fset := token.NewFileSet()
	defined := map[string]bool{}
	for _, path := range files {
		if slices.Contains(skip, filepath.Base(path)) {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("hangguard: %v", err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if _, ok := exempt[fn.Name.Name]; ok {
				defined[fn.Name.Name] = true
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if names(n, pkg, "New") {
					t.Helper()
					t.Errorf("%s: %s makes a client with %s.New, whose calls the 2 s default timeout bounds: use the tests' hang-guarded helper (a test about a timeout gives it its own)",
						fset.Position(n.Pos()), fn.Name.Name, pkg)
				}
				return true
			})
		}
	}
	for name := range exempt {
		if !defined[name] {
			t.Errorf("hangguard: %s is exempt, but no test file in %s defines it", name, dir)
		}
	}
}

// names reports whether n is the selector pkg.name.
func names(n ast.Node, pkg, name string) bool {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}
