package pep_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hangGuardExempt are the functions of this package's tests that may make
// a client with pep.New itself, and why.
var hangGuardExempt = map[string]string{
	"newTestClient":    "the helper itself",
	"TestNewValidates": "New's own validation is the subject, with the options as given; its clients send nothing",
	"freezeChild":      "a child process frozen on purpose: its clock and its deadlines are what it measures",
}

// hangGuardFiles are the test files whose functions are not tests: the
// examples show the production defaults to the reader, and the benchmarks
// measure them.
var hangGuardFiles = []string{"example_test.go", "bench_test.go"}

// TestTestClientsHaveAHangGuard: every client this package's tests make
// comes from newTestClient, which bounds its calls by testTimeout (a hang
// guard) unless the test gives its own timeout, never by the production
// default of 2 s. A clean call beside the rest of the suite on a loaded
// machine can take longer than 2 s; it then fails closed (a DENY whose
// Cause is ErrUnavailable, and a nil error) in a test about something
// else: TestE2EExpiredToken/DPoP got a nil error where its refused token
// must be ErrUnauthorized. Adding the guard by hand, client by client, let
// that test through and was lost again in a merge (TestCacheBytesAreHonest),
// so the rule is checked here, in the source, for every test file.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, name := range files {
		if slices.Contains(hangGuardFiles, name) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if _, ok := hangGuardExempt[fn.Name.Name]; ok {
				seen[fn.Name.Name] = true
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if isPepNew(n) {
					t.Errorf("%s: %s makes a client with pep.New, bound by the 2 s default timeout: use newTestClient (a test about a timeout gives its own WithTimeout)",
						fset.Position(n.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	}
	for name := range hangGuardExempt {
		assert.True(t, seen[name], "%s is exempt but no test file defines it: drop it from hangGuardExempt", name)
	}
}

// isPepNew reports whether n names pep.New, called or not.
func isPepNew(n ast.Node) bool {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "New" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "pep"
}
