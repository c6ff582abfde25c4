package mockserver

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrfQuotesEveryCallersValue (a-server14 F1): errf and badField write
// every argument quoted but numbers and said text, whatever the verb, so
// that sayable, which reads a message's quoted strings, sees each of them:
// "origin %s" and "method %s" let a caller's value through whole.
func TestErrfQuotesEveryCallersValue(t *testing.T) {
	t.Parallel()
	secret := "Xq7_vLm2-RtZ9pWk4sNb8cJd3HfQ2mZa" // identifier-shaped, 32 bytes
	e := errf(403, "origin %s, method %v, id %q, %d of %g, %t, %s", secret, secret, "a b", 3, 0.5, true, errors.New("x"))
	assert.Equal(t, `origin "Xq7_vLm2-RtZ9pWk4sNb8cJd3HfQ2mZa", method "Xq7_vLm2-RtZ9pWk4sNb8cJd3HfQ2mZa", id "a b", 3 of 0.5, true, "x"`, e.message)
	assert.Equal(t, `origin (a value of 32 bytes, not repeated), method (a value of 32 bytes, not repeated), id (a value of 3 bytes, not repeated), 3 of 0.5, true, (a value of 1 byte, not repeated)`,
		sayable(e.message, nil), "sayable describes each quoted value")
	b := badField("clientId", "unknown client %s; allowed: %s", secret, said("GET, POST"))
	assert.Equal(t, `clientId: unknown client "Xq7_vLm2-RtZ9pWk4sNb8cJd3HfQ2mZa"; allowed: GET, POST`, b.message)
	assert.Equal(t, `unknown client "Xq7_vLm2-RtZ9pWk4sNb8cJd3HfQ2mZa"; allowed: GET, POST`, b.details[0].Message)
	assert.Equal(t, "method PATCH", errf(405, "method %s", methodWord("PATCH")).message)
	assert.Equal(t, `method "Patch"`, errf(405, "method %s", methodWord("Patch")).message)
}

// saidSources lists each text the server's code puts into an error message
// unquoted (said), by file, function and expression, with why it is the
// server's own and not a caller's value. A new said fails
// TestOnlyTheServersTextIsSaid until it is listed here, so that
// a caller's value cannot slip into a message where sayable does not look
// without someone saying why it is not one.
var saidSources = map[string]string{
	"auth.go: protectIn: need":                                        "the role a route needs, from the route's registration",
	"auth.go: refuse: f.message":                                      "an authentication failure's message, composed by the server (caller values in it %q-quoted)",
	"authzen.go: accessEvaluations: semanticExecuteAll":               "a constant of the API",
	"authzen.go: accessEvaluations: semanticDenyOnFirstDeny":          "a constant of the API",
	"authzen.go: accessEvaluations: semanticPermitOnFirstPermit":      "a constant of the API",
	"handlers.go: fail: fe.Message":                                   "a store field error's message, composed by the store",
	"authcode.go: checkAuthRequest: rp.desc":                          "refusedAuthParams' constant description",
	"authcode.go: authorization: ir.message":                          "an issue refusal's message, composed by the server",
	"authcode_sealed.go: spendCode: errSharedPredates.Error()":        "a sentinel error's text, the server's",
	"authcode_sealed.go: spendCode: ir.message":                       "an issue refusal's message, composed by the server",
	"authcode_sealed.go: spendCode: err.Error()":                      "the shared store's refusal or errSharedPredates, composed by the server",
	"dpop.go: tokenProofError: msg":                                   "serverUnavailable's message, composed by the server",
	"dpop.go: tokenProofError: dpop.ErrorDescription(err)":            "the dpop package's description of a refused proof, constant text",
	"identity.go: grant: rp.desc":                                     "refusedTokenParams' constant description",
	"identity.go: redeemCode: desc":                                   "bad's argument, a constant at each call",
	"shared.go: vouchedToken: ir.message":                             "an issue refusal's message, composed by the server",
	"shared.go: sharedOAuthUnavailable: errSharedUnavailable.Error()": "a sentinel error's text, the server's",
	"query.go: wellFormedQuery: problem":                              "queryFault's problem: constant text and url's escape errors, which quote the escape",
	"respond.go: decodeBytes: me.Problem()":                           "strictjson's problem, which quotes the member it names",
	"respond.go: decodeBytes: err.Error()":                            "strictjson's syntax error: encoding/json's text, as before",
	"respond.go: typeError: k":                                        "a JSON type's name (jsonType)",
	"server.go: noRoute: allow":                                       "the methods the router registered for the path",
	"server.go: methodWord: m":                                        "one of HTTP's methods, matched against the constants",
	"webui.go: uiGuard: err.Error()":                                  "a shared store's refusal, composed by the server",
	"webui.go: uiGuard: u.Username":                                   "the signed-in session's own user, read from the store, told to that user",
	"webui.go: readUIForm: err.Error()":                               "url.ParseQuery's error, which quotes the bad escape",
	"webui.go: uiLogin: ir.message":                                   "an issue refusal's message, composed by the server",
	"webui.go: uiLogout: err.Error()":                                 "a shared store's refusal, composed by the server",
}

// constantString reports whether e is a string literal, a constant
// declared in the package, or a concatenation of them.
func constantString(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.Ident:
		return e.Obj != nil && e.Obj.Kind == ast.Con
	case *ast.ParenExpr:
		return constantString(e.X)
	case *ast.BinaryExpr:
		return e.Op == token.ADD && constantString(e.X) && constantString(e.Y)
	}
	return false
}

// TestOnlyTheServersTextIsSaid walks the package's code: every errf,
// badField and oauthErrorf call has a constant format (a caller's value
// cannot be the format, where quoteArgs does not reach), every oauthError
// literal's description is a constant (else oauthErrorf builds it), and
// every said is listed in saidSources.
func TestOnlyTheServersTextIsSaid(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	found := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, path, src, 0)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					// An OAuth error's description is a constant, or
					// oauthErrorf's, which quotes its arguments
					// (a-fix14 F1: "parameter " + paramName(name)).
					if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "oauthError" && fn.Name.Name != "oauthErrorf" {
						for _, el := range lit.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "description" && !constantString(kv.Value) {
								t.Errorf("%s: an oauthError's description is not a constant string: build it with oauthErrorf", fset.Position(kv.Pos()))
							}
						}
					}
					return true
				}
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				id, ok := call.Fun.(*ast.Ident)
				if !ok {
					return true
				}
				switch id.Name {
				case "errf", "badField":
					if !constantString(call.Args[1]) {
						t.Errorf("%s: %s's format is not a constant string", fset.Position(call.Pos()), id.Name)
					}
				case "oauthErrorf":
					if !constantString(call.Args[2]) {
						t.Errorf("%s: %s's format is not a constant string", fset.Position(call.Pos()), id.Name)
					}
				case "said":
					var b bytes.Buffer
					require.NoError(t, printer.Fprint(&b, fset, call.Args[0]))
					key := path + ": " + fn.Name.Name + ": " + b.String()
					found[key] = true
					if _, ok := saidSources[key]; !ok {
						t.Errorf("%s: said(%s) is not listed in saidSources (key %q): say why it is the server's text, or let errf quote it",
							fset.Position(call.Pos()), b.String(), key)
					}
				}
				return true
			})
		}
	}
	var stale []string
	for key := range saidSources {
		if !found[key] {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	assert.Empty(t, stale, "saidSources lists a said that is no more")
}
