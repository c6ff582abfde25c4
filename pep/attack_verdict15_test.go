package pep_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// a-fix15 F1: a WWW-Authenticate field is a comma-separated list (RFC 9110
// section 11.6.1, #challenge), and RFC 9110 section 5.3 lets it be split
// over several field lines at any comma: the lines mean their values
// joined with ", ". readAnswer reads each line on its own, so an
// auth-param on a line of its own belongs to no scheme: a DPoP
// challenge's error="use_dpop_nonce" (or "invalid_dpop_proof") on the next
// line is read as no DPoP signal, and a 401 with no signal refuses the
// token. A valid token is retired (tokenExpired, its cached GRANTs purged,
// every later call ErrUnauthorized) by a plain nonce request.
func TestAttackSplitChallengeRetiresValidToken(t *testing.T) {
	t.Parallel()
	split := func(lines ...string) gwHook {
		return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
			for _, l := range lines {
				w.Header().Add("WWW-Authenticate", l)
			}
			w.Header().Set("DPoP-Nonce", "n-1")
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized", "message": "refused"})
			return true
		}
	}
	tests := []struct {
		name string
		hook gwHook
	}{
		{"a nonce request split after the scheme's first parameter", split(`DPoP algs="ES256"`, `error="use_dpop_nonce", error_description="nonce required"`)},
		{"a nonce request split after a realm", split(`DPoP realm="gw"`, `error="use_dpop_nonce"`)},
		{"a proof refusal split after the scheme's first parameter", split(`DPoP algs="ES256"`, `error="invalid_dpop_proof"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c, rec, _ := g.dpopClient(t, "alice", nil)
			require.True(t, checked(t, c, "orders", "read").Allowed())
			require.Equal(t, 1, c.Stats().CacheEntries)

			g.setHook(tt.hook)
			_, err := c.Check(t.Context(), "orders", "write")
			assert.ErrorIs(t, err, pep.ErrProofRejected, "the answer blames the proof or asks a nonce: %v", err)
			assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the token was not refused: %v", err)
			assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "no tokenExpired for a nonce request")
			assert.Equal(t, 1, c.Stats().CacheEntries, "nothing purged")
		})
	}
}

// a-fix15 F2: "a 400/403 naming invalid_token anywhere refuses the token",
// and a body not read whole is searched for it as raw bytes only. JSON
// spells the same string with escapes ("invalid\u005ftoken"): a body the
// client reads whole decodes it and refuses the token, but once a fault
// (here a raw tab in a message, as the team's own cases use) makes it
// unclear, the escaped refusal after the fault is read as nothing: the
// refused token is not retired and its cached GRANT is served on.
func TestAttackEscapedRefusalInUnclear400And403(t *testing.T) {
	t.Parallel()
	const body = "{\"message\":\"proof for GET\thttps://api/\",\"error\":\"invalid\\u005ftoken\"}"
	for _, status := range []int{http.StatusBadRequest, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c, rec, _ := g.dpopClient(t, "alice", nil)
			require.True(t, checked(t, c, "orders", "read").Allowed())
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("WWW-Authenticate", `DPoP realm="gw", algs="ES256"`)
				w.Header().Set("DPoP-Nonce", "n-1")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
				return true
			})
			d, err := c.Check(t.Context(), "orders", "write")
			if err == nil {
				err = d.Cause
			}
			t.Logf("allowed=%v err=%v", d.Allowed(), err)
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the answer names invalid_token: %v", err)
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds(), "the refused token is retired")
			assert.Zero(t, c.Stats().CacheEntries, "the refused token's GRANT is purged")
			again, _ := c.Check(t.Context(), "orders", "read")
			assert.False(t, again.Allowed(), "a token the gateway refused is GRANTed from the cache")
			g.setHook(nil)
		})
	}
}

// a-fix15 F1, the other way: the same split hides a DPoP challenge's error
// that, on one line, refuses the token in a 401 (readAnswer: "in a 401, a
// DPoP challenge's other errors refuse the token too"). Split, it belongs
// to no scheme; the body's use_dpop_nonce then reads the answer as a nonce
// request: resent, never retired, and the token's cached GRANT is served
// on. The control, on one line, retires it.
func TestAttackSplitChallengeHidesRefusal(t *testing.T) {
	t.Parallel()
	for _, lines := range [][]string{
		{`DPoP algs="ES256", error="invalid_request", error_description="token audience mismatch"`}, // control
		{`DPoP algs="ES256"`, `error="invalid_request", error_description="token audience mismatch"`},
	} {
		t.Run(strings.Join(lines, " | "), func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c, rec, _ := g.dpopClient(t, "alice", nil)
			require.True(t, checked(t, c, "orders", "read").Allowed())
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				for _, l := range lines {
					w.Header().Add("WWW-Authenticate", l)
				}
				w.Header().Set("DPoP-Nonce", "n-1")
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "use_dpop_nonce"})
				return true
			})
			_, err := c.Check(t.Context(), "orders", "write")
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the same answer on one line refuses the token: %v", err)
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
			again, _ := c.Check(t.Context(), "orders", "read")
			assert.False(t, again.Allowed(), "a token the gateway refused is GRANTed from the cache")
		})
	}
}
