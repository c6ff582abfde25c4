package authzen_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestDiscoveryRefusalIsNotATokenRefusal: the discovery request carries no
// credential, so a 401 to it (metadata behind an auth proxy) says nothing
// of the client's token or DPoP proof: whatever its challenge, the error
// matches ErrDiscovery and neither ErrUnauthorized (on which a service
// replaces its token) nor ErrProofRejected, says what to do, and no
// tokenExpired is emitted.
func TestDiscoveryRefusalIsNotATokenRefusal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		challenge string
		dpop      bool
	}{
		{"Bearer, invalid_token", `Bearer error="invalid_token"`, false},
		{"DPoP, nonce challenge", `DPoP error="use_dpop_nonce", algs="ES256"`, true},
		{"DPoP, invalid_dpop_proof", `DPoP error="invalid_dpop_proof", algs="ES256"`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var credentialed atomic.Bool
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "" || r.Header.Get("DPoP") != "" {
					credentialed.Store(true)
				}
				w.Header().Set("WWW-Authenticate", tt.challenge)
				w.Header().Set("DPoP-Nonce", "n-1")
				answer(http.StatusUnauthorized, `{"error":"Unauthorized"}`)(w, r)
			})
			var expired atomic.Int32
			c := testkit.Must(hangguard.NewAuthZEN(srv.URL, authzen.WithRetry(0, 0, 0), authzen.WithBreaker(0, 0),
				authzen.WithEventHandler(func(e events.Event) {
					if e.Kind == events.TokenExpired {
						expired.Add(1)
					}
				})))(t)
			t.Cleanup(func() { _ = c.Close() })
			if tt.dpop {
				signer := testkit.Must(dpop.GenerateKey())(t)
				c.SetDPoPToken(pepToken, signer)
			} else {
				c.SetToken(pepToken)
			}

			_, searchErr := c.SearchResource(t.Context(), req)
			d, evalErr := c.Evaluate(t.Context(), req)
			require.NoError(t, evalErr, "a discovery failure is a decision's Cause")
			assert.False(t, d.Allowed())
			for _, err := range []error{searchErr, d.Cause, c.Discover(t.Context())} {
				require.ErrorIs(t, err, authzen.ErrDiscovery)
				assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "a 401 to a request that carried no credential: %v", err)
				assert.NotErrorIs(t, err, authzen.ErrProofRejected, "a 401 to a request that carried no proof: %v", err)
				assert.Contains(t, err.Error(), "WithEndpoints", "it says what to do")
				assert.NotContains(t, err.Error(), pepToken)
			}
			assert.False(t, credentialed.Load(), "discovery sends no credential")
			assert.Zero(t, expired.Load())
		})
	}
}
