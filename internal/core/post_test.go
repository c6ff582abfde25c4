package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlyPostSendsACredential holds the rule that makes a refused token
// impossible to miss: the Exchanger's Post, which sends a request with a
// credential, is called in one place, Core.post, which hands every error
// to the 401 handler (refused). The clients reach post only through Send,
// SendWide and Exchange.
func TestOnlyPostSendsACredential(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var callers []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Post" {
					if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "x" {
						callers = append(callers, fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	require.Equal(t, []string{"post"}, callers, "the Exchanger's Post is called outside Core.post, bypassing the 401 handler")
}
