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

// TestAttackBodyErrorInvalidTokenKeptByALaterMember (a-fix14b F1, end to
// end): the gateway refuses a revoked DPoP token with a 401 whose JSON
// body's "error" is invalid_token, followed by another member that
// encoding/json also takes for "error" (a duplicate, or "Error"). The
// client reads the last one as a proof/nonce error (ErrProofRejected), so
// the token is not retired and its cached GRANT keeps being served.
func TestAttackBodyErrorInvalidTokenKeptByALaterMember(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"error":"invalid_token","error":"use_dpop_nonce"}`,
		`{"error":"invalid_token","Error":"invalid_dpop_proof"}`,
	} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			signer, err := dpop.GenerateKey()
			require.NoError(t, err)
			var revoked atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, _ := io.ReadAll(r.Body)
				if revoked.Load() {
					w.Header().Set("WWW-Authenticate", `DPoP realm="gw", algs="ES256"`)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(body))
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
			d, err = c.Check(t.Context(), "orders", "write")
			if err == nil {
				err = d.Cause
			}
			require.Error(t, err)
			t.Logf("the refused call's error: %v", err)
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the body's \"error\" is invalid_token")

			d, err = c.Check(t.Context(), "orders", "read")
			assert.False(t, err == nil && d.Allowed(), "the refused token's cached GRANT is still served")
		})
	}
}
