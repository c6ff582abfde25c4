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

// TestAttackInvalidTokenIn400KeepsGrants (a-dpop15 F3, end to end): the
// gateway refuses a revoked DPoP token with a 400 (RFC 6750 section 3.1
// says the invalid_token answer SHOULD, not MUST, be a 401) whose DPoP
// challenge or JSON body says error="invalid_token", with a new
// DPoP-Nonce. nonceAsked reads that answer as refusing the token (it is not
// resent for the nonce), but NewResponseError reads a DPoP verdict for a
// 401 only, so the blame reads no refusal: the token is never retired and
// its cached GRANT keeps being served while every request it makes is
// refused. Two readings of one answer.
func TestAttackInvalidTokenIn400KeepsGrants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, challenge, body string }{
		{"challenge", `DPoP realm="gw", error="invalid_token", error_description="token revoked"`, `{"error":"Bad Request"}`},
		{"body", `DPoP realm="gw", algs="ES256"`, `{"error":"invalid_token","error_description":"token revoked"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			var nonce atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, _ := io.ReadAll(r.Body)
				if revoked.Load() {
					w.Header().Set("WWW-Authenticate", tc.challenge)
					w.Header().Set("DPoP-Nonce", "n"+string(rune('a'+nonce.Add(1)%26)))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = w.Write([]byte(tc.body))
					return
				}
				scope := "read"
				if strings.Contains(string(req), `"write"`) {
					scope = "write"
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"` + scope + `","status":"GRANT"}]}`))
			}))
			defer srv.Close()

			c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()))
			c.SetDPoPToken("dpop-bound-token", signer)
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed(), "cached GRANT")

			revoked.Store(true)
			for range 3 {
				d, err = c.Check(t.Context(), "orders", "write")
				if err == nil {
					err = d.Cause
				}
				require.Error(t, err)
			}
			t.Logf("the refused call's error: %v", err)
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the answer says invalid_token")

			d, err = c.Check(t.Context(), "orders", "read")
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached GRANT is still served")
		})
	}
}
