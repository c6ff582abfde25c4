package authzen_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// TestAPDPRefusalNamedAnywhereInTheBodyRetiresTheToken (pep's
// TestARefusalNamedAnywhereInTheBodyRetiresTheToken for a PDP): a body
// naming invalid_token anywhere refuses the token, a 403 and a 401 that
// also asks a nonce alike, and the token's cached allow is gone
// (a-dpop16 F1).
func TestAPDPRefusalNamedAnywhereInTheBodyRetiresTheToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, challenge, nonce, body string
		status                       int
	}{
		{"403 a syntax error", "", "", `{"error":{"code":"invalid_token"}`, 403},
		{"403 error object", "", "", `{"error":{"code":"invalid_token"}}`, 403},
		{"401 asking a nonce, a syntax error", `DPoP error="use_dpop_nonce"`, "fresh-nonce-1", `{"error":{"code":"invalid_token"}`, 401},
		{"401 asking a nonce, error object", `DPoP error="use_dpop_nonce"`, "fresh-nonce-1", `{"error":{"code":"invalid_token"}}`, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				if revoked.Load() {
					if tc.challenge != "" {
						w.Header().Set("WWW-Authenticate", tc.challenge)
					}
					if tc.nonce != "" {
						w.Header().Set("DPoP-Nonce", tc.nonce)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"decision":true}`))
			})
			c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
				authzen.WithHTTPClient(srv.Client()), authzen.WithRetry(0, 0, 0))
			c.SetDPoPToken("dpop-bound-token", signer)
			cached := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
				Resource: authzen.Resource{Type: "document", ID: "42"}}
			d, err := c.Evaluate(t.Context(), cached)
			require.NoError(t, err)
			require.True(t, d.Allowed(), "cached allow")

			revoked.Store(true)
			miss := cached
			miss.Resource.ID = "43"
			d, err = c.Evaluate(t.Context(), miss)
			if err == nil {
				err = d.Cause
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP refused the token; got %v", err)

			d, err = c.Evaluate(t.Context(), cached)
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached allow is still served")
		})
	}
}
