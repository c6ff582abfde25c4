package hangguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Timeout is the hang guard: the timeout (WithTimeout) that a package's
// test helper gives every client before the test's own options, so that a
// test about a timeout still gives its own, which wins. It bounds a call
// that hangs without cutting a clean one on a loaded machine, which the 2 s
// production default can.
const Timeout = time.Minute

// Check reports, through t.Errorf, every use of the constructor pkg.New
// (pkg is the client package's name as the tests import it: "pep",
// "authzen"), called or not, in the *_test.go files of dir (a package's
// tests run in its directory: "."), except in the functions named in
// exempt, the helper among them, each with the reason it may use the
// constructor itself, and in the files named in skip (examples show the
// production defaults; benchmarks measure them). A name of exempt that no
// file defines is reported too, so that the list cannot outlive what it
// excuses. It fails t at once when dir holds no test file or one does not
// parse. Build constraints are ignored: every file is read. A package
// whose tests make clients of both packages calls it once for each.
func Check(t testing.TB, dir, pkg string, exempt map[string]string, skip ...string) {
	t.Helper()
	check(t, filepath.Join(dir, "*_test.go"), pkg, exempt, skip)
}

// CheckSupport is Check for a test-support package (adaptertest, whose
// exported helpers make the clients of other packages' tests): it reads
// the files of dir that are not tests, with the same rules.
func CheckSupport(t testing.TB, dir, pkg string, exempt map[string]string, skip ...string) {
	t.Helper()
	tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatalf("hangguard: %v", err)
	}
	for _, path := range tests {
		skip = append(skip, filepath.Base(path))
	}
	check(t, filepath.Join(dir, "*.go"), pkg, exempt, skip)
}

// check is Check on the files that pattern matches.
func check(t testing.TB, pattern, pkg string, exempt map[string]string, skip []string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("hangguard: no files match %s (%v)", pattern, err)
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
			t.Errorf("hangguard: %s is exempt, but no file of %s defines it", name, pattern)
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
