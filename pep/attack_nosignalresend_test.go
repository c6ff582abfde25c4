package pep_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackNoSignalRefusalDroppedByTheNonceResend (a-fix14b F2): a 401
// that carries no DPoP signal refuses the token (the blame:
// dpopVerdictOf's dpopNone, refusesToken), yet the resend reads the very
// same answer as a possible nonce request whenever it carries a new
// DPoP-Nonce (nonceAsked stops only on dpopTokenRefused). The refusal is
// then replaced by whatever the resend gets: here a 503, so the call fails
// as "unavailable", the token is not retired, no tokenExpired is emitted,
// nothing is published, and the token's cached GRANT keeps being served.
// The same 401 without a new nonce retires the token (the control).
func TestAttackNoSignalRefusalDroppedByTheNonceResend(t *testing.T) {
	t.Parallel()
	for _, withNonce := range []bool{false, true} {
		name := "401 without a nonce (control)"
		if withNonce {
			name = "401 with a new nonce"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			var afterRefusal atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if revoked.Load() {
					if afterRefusal.Add(1) > 1 { // the resend: the gateway is busy
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					// the token was revoked: a plain 401, no DPoP error
					w.Header().Set("WWW-Authenticate", `DPoP realm="gw", algs="ES256"`)
					if withNonce { // a server that sends a fresh nonce on every answer
						w.Header().Set("DPoP-Nonce", "fresh-nonce-1")
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(`{"error":"Unauthorized","message":"the token was revoked"}`))
					return
				}
				scope := "read"
				if strings.Contains(string(body), `"write"`) {
					scope = "write"
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"` + scope + `","status":"GRANT"}]}`))
			}))
			defer srv.Close()

			c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithRetry(0, 0, 0))
			c.SetDPoPToken("dpop-bound-token", signer)
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed(), "cached GRANT")

			revoked.Store(true)
			d, err = c.Check(t.Context(), "orders", "write") // a miss: the gateway refuses the token
			if err == nil {
				err = d.Cause
			}
			require.Error(t, err)
			t.Logf("the refused call's error: %v", err)
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the gateway's 401 refused the token")

			d, err = c.Check(t.Context(), "orders", "read")
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached GRANT is still served")
		})
	}
}
