package mockserver

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
)

// TestUnauthenticatedTokenRequestsStoreNoProof floods acme's token endpoint
// with authorization-code requests that carry valid DPoP proofs, each of a
// key of its own, and a made-up client or code; then a verified caller's
// proof of that very second must be accepted, at a protected route and at
// the token endpoint. The endpoint used to record each proof before it
// checked the client, so the flood filled the realm's replay cache (made
// small here) and every DPoP user of the realm got 503. A full cache
// cannot tell a proof of the same second from a replay, so this passes only
// if the flood stored nothing.
func TestUnauthenticatedTokenRequestsStoreNoProof(t *testing.T) {
	a := newOrgAPI(t)
	a.s.auth.proofOpts = append(a.s.auth.proofOpts, dpop.WithReplayCacheSize(3))
	clock := func() time.Time { return time.Unix(0, a.now.Load()) } // every proof of the server's second
	tokenURL := a.url + "/realms/acme/protocol/openid-connect/token"
	post := func(t *testing.T, signer *dpop.Signer, form url.Values) (int, string) {
		t.Helper()
		proof, err := signer.Proof(http.MethodPost, tokenURL, "", "")
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("DPoP", proof)
		resp, err := a.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	newSigner := func(t *testing.T) *dpop.Signer {
		key, err := dpop.GenerateKey()
		require.NoError(t, err)
		return key.WithClock(clock)
	}

	for i := range 12 {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {"made-up"},
			"redirect_uri": {"https://app.test/cb"}, "code_verifier": {strings.Repeat("v", 43)}}
		want := http.StatusBadRequest // invalid_grant: no such code
		if i%2 == 0 {
			form.Set("client_id", "nobody")
			want = http.StatusUnauthorized // invalid_client
		} else {
			form.Set("client_id", "admin-cli") // public: only the code authenticates it
		}
		status, body := post(t, newSigner(t), form)
		require.Equal(t, want, status, body)
	}

	alice := newSigner(t)
	require.Equal(t, http.StatusOK, a.dpopGet(t, alice, "acme", "alice").StatusCode, "a verified DPoP caller is served")
	status, body := post(t, newSigner(t), url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"bob"}, "password": {"bob"}})
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"token_type":"DPoP"`)
}
