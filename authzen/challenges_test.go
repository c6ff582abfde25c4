package authzen_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
)

// TestTwoDPoPChallengesRefusingTheTokenPurgeItsDecisions (a-dpop14 F2): a
// 401 with a DPoP-Nonce and `DPoP error="use_dpop_nonce"` then `DPoP
// error="invalid_token"` has one verdict, read by the resend and the blame
// alike, and the challenge refusing the token wins: no resend,
// ErrUnauthorized, the token's cached allow purged. Before the fix the
// resend rule saw invalid_token but the blame read only the first
// challenge: ErrProofRejected, and the refused token's allow stayed.
func TestTwoDPoPChallengesRefusingTheTokenPurgeItsDecisions(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	var revoked atomic.Bool
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if revoked.Load() {
			sent.Add(1)
			w.Header().Add("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="nonce required"`)
			w.Header().Add("WWW-Authenticate", `DPoP error="invalid_token", error_description="token revoked"`)
			w.Header().Set("DPoP-Nonce", "fresh-nonce")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":true}`))
	}))
	defer srv.Close()
	c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
		authzen.WithHTTPClient(srv.Client()), authzen.WithCache(100, time.Minute, time.Minute))
	c.SetDPoPToken("dpop-bound-token", signer)
	read := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
		Resource: authzen.Resource{Type: "document", ID: "42"}}
	write := read
	write.Action.Name = "can_write"
	d, err := c.Evaluate(t.Context(), read)
	require.NoError(t, err)
	require.True(t, d.Allowed())

	revoked.Store(true)
	_, err = c.Evaluate(t.Context(), write)
	require.Error(t, err)
	assert.ErrorIs(t, err, authzen.ErrUnauthorized, "the PDP said invalid_token (got %v)", err)
	assert.NotErrorIs(t, err, authzen.ErrProofRejected)
	assert.Equal(t, int32(1), sent.Load(), "no resend for an answer refusing the token")

	d, _ = c.Evaluate(t.Context(), read)
	require.False(t, d.Allowed(), "an allow of the token the PDP refused is still served from the cache")
}
