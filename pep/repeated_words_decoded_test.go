package pep_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAPercentThenJSONDecodedScopeRetiresNoToken: a caller's scope
// %5Cu0069nvalid_token, percent-decoded by a gateway and repeated raw in
// JSON, which the reader decodes into invalid_token, retires no token
// (a-fix17c F1: the request's words were decoded in one order only).
func TestAPercentThenJSONDecodedScopeRetiresNoToken(t *testing.T) {
	t.Parallel()
	const scope = `%5Cu0069nvalid_token`
	const repeated = `\u0069nvalid_token` // percent-decoded, templated raw into JSON
	assertScopeNotLockingOut(t, scope, scope, http.StatusBadRequest, "application/json",
		`{"error":"Bad Request","message":"unknown scope","scope":"`+repeated+`"}`)
}

// TestAUTF16SpelledScopeRepeatedRetiresNoToken: a caller's scope that
// is the UTF-16 bytes of invalid_token, repeated first in a plain-text 400
// that the reader then re-encodes from UTF-16, retires no token (a-fix17c
// F2: the request's words were read as UTF-8 only).
func TestAUTF16SpelledScopeRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	var scope []byte
	for _, c := range []byte("invalid_token") {
		scope = append(scope, c, 0)
	}
	const marker = `i\u0000n\u0000v\u0000a\u0000l` // as the JSON request carries it
	assertScopeNotLockingOut(t, string(scope), marker, http.StatusBadRequest, "text/plain; charset=utf-8",
		string(scope)+" is not a known scope\n")
}

// TestAQuotedPairSpelledWordInAChallengeRetiresNoToken: a caller's scope
// `read", error="inv\alid_token`, templated into a 403 challenge whose
// quoted-pair the reader undoes, retires no token (a-fix17c F5).
func TestAQuotedPairSpelledWordInAChallengeRetiresNoToken(t *testing.T) {
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
