package authzen_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// proofNonce returns the nonce claim of the request's DPoP proof.
func proofNonce(r *http.Request) string {
	parts := strings.Split(r.Header.Get("DPoP"), ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Nonce string `json:"nonce"`
	}
	_ = json.Unmarshal(raw, &claims)
	return claims.Nonce
}

// a-fix15 F1 (authzen): a PDP asks a nonce with a WWW-Authenticate field
// split over two field lines at a comma (RFC 9110 section 5.3: the same as
// `DPoP algs="ES256", error="use_dpop_nonce"` on one line) and accepts the
// resend carrying it. The client reads each line alone, finds no DPoP
// signal, takes the 401 for a refusal of the token, never resends, and
// retires a valid token: the evaluation fails ErrUnauthorized instead of
// being allowed.
func TestAttackSplitNonceChallengeRefusesValidToken(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	var asked atomic.Bool
	g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		if proofNonce(r) != "fresh-1" {
			asked.Store(true)
			w.Header().Add("WWW-Authenticate", `DPoP algs="ES256"`)
			w.Header().Add("WWW-Authenticate", `error="use_dpop_nonce", error_description="a nonce is required"`)
			w.Header().Set("DPoP-Nonce", "fresh-1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Unauthorized"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":true}`))
	})
	c := mustAuthZEN(t, g.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
		authzen.WithHTTPClient(g.Client()), authzen.WithRetry(0, 0, 0))
	c.SetDPoPToken("dpop-bound-token", signer)
	req := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
		Resource: authzen.Resource{Type: "document", ID: "42"}}
	d, err := c.Evaluate(t.Context(), req)
	if err == nil {
		err = d.Cause
	}
	require.True(t, asked.Load())
	assert.NoError(t, err, "a nonce request is answered by a resend with the nonce")
	assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "the valid token was refused")
	assert.True(t, d.Allowed(), "the resend with the nonce is allowed")
}

// a-fix15 F2 (authzen): a PDP's 400 or 403 whose body names invalid_token
// (JSON-escaped, after a raw tab that makes the body unclear) refuses the
// token; the client searches an unclear body for raw bytes only, reads
// the refusal as nothing, and keeps serving the token's cached allow.
func TestAttackEscapedRefusalKeepsCachedAllow(t *testing.T) {
	t.Parallel()
	const body = "{\"message\":\"a\tb\",\"error\":\"invalid\\u005ftoken\"}"
	for _, status := range []int{http.StatusBadRequest, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if revoked.Load() {
					w.Header().Set("WWW-Authenticate", `DPoP realm="pdp", algs="ES256"`)
					w.WriteHeader(status)
					_, _ = w.Write([]byte(body))
					return
				}
				_, _ = w.Write([]byte(`{"decision":true}`))
			})
			c := mustAuthZEN(t, g.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
				authzen.WithHTTPClient(g.Client()), authzen.WithRetry(0, 0, 0))
			c.SetDPoPToken("dpop-bound-token", signer)
			cached := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
				Resource: authzen.Resource{Type: "document", ID: "42"}}
			d, err := c.Evaluate(t.Context(), cached)
			require.NoError(t, err)
			require.True(t, d.Allowed())

			revoked.Store(true)
			miss := cached
			miss.Resource.ID = "43"
			d, err = c.Evaluate(t.Context(), miss)
			if err == nil {
				err = d.Cause
			}
			t.Logf("the refusal's error: %v", err)
			assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP named invalid_token")
			d, err = c.Evaluate(t.Context(), cached)
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached allow is still served")
		})
	}
}
