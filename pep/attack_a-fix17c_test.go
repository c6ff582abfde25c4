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

// TestAttackUTF16SpelledScopeRepeatedFirstRetiresSharedToken: a caller's
// scope is the UTF-16LE bytes of invalid_token ("i\x00n\x00v\x00..."), valid
// UTF-8 that names no word as sent or decoded (echoable reads it as
// UTF-8: the letters stand apart). A gateway that answers 400 with the
// unknown scope first in a plain-text body gives an answer whose first
// bytes have the zero pattern of UTF-16LE: utf8Of re-encodes it, and the
// re-encoded body holds invalid_token: the shared token is retired, every
// caller locked out. The request-word rule does not read the request as
// the answer is read (utf8Of).
func TestAttackUTF16SpelledScopeRepeatedFirstRetiresSharedToken(t *testing.T) {
	t.Parallel()
	var scope []byte
	for _, c := range []byte("invalid_token") {
		scope = append(scope, c, 0)
	}
	const marker = `i\u0000n\u0000v\u0000a\u0000l` // as the JSON request carries it
	assertScopeNotLockingOut(t, string(scope), marker, http.StatusBadRequest, "text/plain; charset=utf-8",
		string(scope)+" is not a known scope\n")
}
