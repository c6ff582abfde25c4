package pep_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackTwoChallengesKeepRevokedTokensGrants: the gateway refuses a
// revoked DPoP token with a 401 carrying two WWW-Authenticate values, the
// first asking for a nonce and the second saying invalid_token (and a
// DPoP-Nonce). The resend rule (nonceAsked) reads every value and sees
// invalid_token: no resend. The verdict (NewResponseError) joins the
// values and reads only the first DPoP error, use_dpop_nonce: the 401 is
// taken for a proof refusal, the token is not retired, and its cached
// GRANTs keep being served. Both should read the answer one way.
func TestAttackTwoChallengesKeepRevokedTokensGrants(t *testing.T) {
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	var revoked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if revoked.Load() {
			w.Header().Add("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="nonce required"`)
			w.Header().Add("WWW-Authenticate", `DPoP error="invalid_token", error_description="token revoked"`)
			w.Header().Set("DPoP-Nonce", "fresh-nonce")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"write","status":"GRANT"}]}`))
	}))
	defer srv.Close()
	c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithCache(100, time.Minute, time.Minute))
	c.SetDPoPToken("dpop-bound-token", signer)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	require.True(t, d.Allowed())

	revoked.Store(true)
	_, err = c.Check(t.Context(), "orders", "write")
	require.Error(t, err)
	assert.ErrorIs(t, err, pep.ErrUnauthorized, "the gateway said invalid_token: the token is refused (got %v)", err)

	d, _ = c.Check(t.Context(), "orders", "read")
	require.False(t, d.Allowed(), "a GRANT of the token the gateway refused is still served from the cache")
}
