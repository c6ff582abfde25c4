package pep_test

import (
	"net/http"
	"testing"
)

// TestAttackPercentThenJSONDecodedScopeRetiresSharedToken: a caller's
// scope `%5Cu0069nvalid_token` (a percent-encoded backslash, then a JSON
// \u escape for the i) names neither word as sent, nor after JSON
// unescaping twice then percent-decoding (echoable's one order); a gateway
// that percent-decodes the scope (as in a-fix17 F5) and repeats it
// unescaped in a JSON answer (as in a-fix17 F1) says `"\u0069nvalid_token"`,
// a string the reader decodes to invalid_token: the 400 refuses the shared
// token, and every caller is locked out.
func TestAttackPercentThenJSONDecodedScopeRetiresSharedToken(t *testing.T) {
	t.Parallel()
	const scope = `%5Cu0069nvalid_token`
	const repeated = `\u0069nvalid_token` // percent-decoded, templated raw into JSON
	assertScopeNotLockingOut(t, scope, scope, http.StatusBadRequest, "application/json",
		`{"error":"Bad Request","message":"unknown scope","scope":"`+repeated+`"}`)
}
