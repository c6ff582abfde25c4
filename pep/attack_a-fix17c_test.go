package pep_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
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

// TestAttackScopeInjectedErrorIntoADPoPNonceChallengeRetiresSharedToken:
// a gateway that asks a DPoP nonce with a 401 whose challenge repeats the
// request's scope unescaped (as the 403 of a-fix17 F4 does) lets a caller
// whose scope is `read", error="unknown_scope` add an error attribute to
// the DPoP challenge. The caller names no invalid_token, so the request
// is not echoable; and in a 401's DPoP challenge any error but the
// proof's two refuses the token (readAnswer): the refusal wins over
// use_dpop_nonce, nothing is resent, and the client's shared, valid,
// DPoP-bound token is retired with its cached GRANTs. The request-word
// rule guards one word, while the injection makes any word a verdict.
func TestAttackScopeInjectedErrorIntoADPoPNonceChallengeRetiresSharedToken(t *testing.T) {
	t.Parallel()
	const scope = `read", error="unknown_scope`
	g := startReference(t)
	c, rec, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	var once atomic.Bool
	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte("unknown_scope")) || !once.CompareAndSwap(false, true) {
			return false
		}
		w.Header().Set("DPoP-Nonce", "n-0123456789abcdef")
		w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", scope="`+scope+`", algs="ES256"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"use_dpop_nonce","message":"a nonce is required"}`))
		return true
	})
	_, err := c.Check(t.Context(), "orders", scope)
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the challenge asks a nonce and repeats the caller's scope: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a caller's scope retired the client's shared token: events %v", rec.kinds())
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}

// TestAttackQuotedPairSplitWordInAChallengeRetiresSharedToken: the
// challenge reader decodes a quoted-string's quoted-pairs (paramValue:
// `\a` is `a`), a decoding echoable never applies: a caller's scope
// `read", error="inv\alid_token` names no invalid_token as sent or
// JSON-, percent- or case-decoded (`\a` is no JSON escape), and a gateway
// repeating it unescaped into its 403 insufficient_scope challenge (the
// gateway of a-fix17 F4) says error="inv\alid_token", read as
// invalid_token: the shared token is retired.
func TestAttackQuotedPairSplitWordInAChallengeRetiresSharedToken(t *testing.T) {
	t.Parallel()
	const scope = `read", error="inv\alid_token`
	g := startReference(t)
	rec := &recorder{}
	c := g.newClient(t, pep.WithEventHandler(rec.handle), pep.WithRetry(1, time.Millisecond, time.Millisecond))
	c.SetToken(g.token(t, "alice"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte(`alid_token`)) {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"Forbidden","message":"insufficient scope"}`))
		return true
	})
	_, err := c.Check(t.Context(), "orders", scope)
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the challenge repeats the caller's scope: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a caller's scope retired the client's shared token: events %v", rec.kinds())
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}
