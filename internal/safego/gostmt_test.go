package safego_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runsNoUserCode lists the go statements of the library that start a
// goroutine outside safego.Call, each with why no user code runs there
// unrecovered; the key is the file (from the repository's root) and the
// function that holds the statement.
var runsNoUserCode = map[string]string{
	"events/events.go: Deliver":                          "drain recovers each handler's panic itself (onPanic)",
	"events/events.go: drain":                            "drain recovers each handler's panic itself (onPanic)",
	"mockserver/mockservertest/mockservertest.go: serve": "serves the reference server (net/http recovers its handlers)",
	"mockserver/cmd/mockserver/main.go: run":             "serves the reference server (net/http recovers its handlers)",
	"mockserver/cmd/mockserver/limit.go: Accept":         "the listener's accept loop: no user code",
	"internal/gatewaytest/gatewaytest.go: serveLocked":   "a test server (net/http recovers its handlers)",
	"internal/gatewaytest/refusing_other.go: Refusing":   "a test listener that closes every connection: no user code",
	"internal/adaptertest/stall.go: StalledFormBody":     "a test client's pipe writer and request: no user code (the handler runs under net/http's recover)",
	"redisstore/redistest/redistest.go: run":             "waits for the redis-server process: no user code",
	"redisstore/redistest/redistest.go: Frozen":          "a test listener that never answers: no user code",
}

// Every goroutine the library starts runs its whole body under
// safego.Call (a func literal that calls it), or is listed in
// runsNoUserCode with the reason no user code runs on it unrecovered: so
// that no new goroutine can run the user's code (a logger, an SDK, a
// store) where its panic would end the process.
func TestEveryGoStatementIsRecovered(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "testdata", rel == "examples", rel == "integration", rel == "scripts":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				g, ok := n.(*ast.GoStmt)
				if !ok {
					return true
				}
				if lit, ok := g.Call.Fun.(*ast.FuncLit); ok && callsSafegoCall(lit.Body) {
					return true
				}
				key := rel + ": " + fn.Name.Name
				found[key] = true
				if _, listed := runsNoUserCode[key]; !listed {
					t.Errorf("%s (%s) starts a goroutine outside safego.Call: run its whole body under one, or list it in runsNoUserCode with the reason no user code runs there", key, fset.Position(g.Pos()))
				}
				return true
			})
		}
		return nil
	})
	require.NoError(t, err)
	for key := range runsNoUserCode {
		assert.True(t, found[key], "runsNoUserCode lists %s, which starts no goroutine outside safego.Call any more: drop it", key)
	}
}

// callsSafegoCall reports whether body calls safego.Call.
func callsSafegoCall(body *ast.BlockStmt) bool {
	calls := false
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Call" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "safego" {
				calls = true
			}
		}
		return !calls
	})
	return calls
}
