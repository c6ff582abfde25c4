package pep_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// attackRotNonces accept only the current nonce; rotating moves to the next.
type attackRotNonces struct{ cur atomic.Int64 }

func (r *attackRotNonces) Valid(_ context.Context, n string) bool {
	return n == "n"+strconv.FormatInt(r.cur.Load(), 10)
}
func (r *attackRotNonces) Next(context.Context) (string, error) {
	return "n" + strconv.FormatInt(r.cur.Load(), 10), nil
}

// TestAttackSlowClientCallFailsAfterNonceRotation: a user's gateway built
// on dpop.Verifier (real clock, no store, WithNonces) and a pep client
// whose clock runs 30 s slow (inside the 60 s window). Once the server's
// nonce goes stale, the Verifier answers the proof "old~start" with the
// bare new nonce, the client's one resend with it is dated before the
// Verifier began and asked again ("new~start"), and the call fails with
// ErrProofRejected: a valid token's call refused, once per rotation.
func TestAttackSlowClientCallFailsAfterNonceRotation(t *testing.T) {
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	slow := signer.WithClock(func() time.Time { return time.Now().Add(-30 * time.Second) })
	rot := &attackRotNonces{}
	v, err := dpop.NewVerifier(dpop.WithNonces(rot))
	require.NoError(t, err)
	const token = "dpop-bound-token"
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := v.Verify(r.Context(), dpop.Request{Proofs: r.Header.Values("DPoP"), Method: r.Method,
			URL: srvURL + r.URL.Path, AccessToken: strings.TrimPrefix(r.Header.Get("Authorization"), "DPoP "), JKT: signer.Thumbprint()})
		var ne *dpop.NonceError
		if errors.As(err, &ne) {
			w.Header().Set("WWW-Authenticate", v.Challenge(err))
			w.Header().Set("DPoP-Nonce", ne.Nonce)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"use_dpop_nonce"}`))
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", v.Challenge(err))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))
	}))
	defer srv.Close()
	srvURL = srv.URL

	c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithCache(0, 0, 0))
	c.SetDPoPToken(token, slow)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err, "first call: one nonce resend passes")
	require.True(t, d.Allowed())

	rot.cur.Add(1) // the server's nonce rotates, as every nonce source does
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err, "a valid token's call after a nonce rotation fails")
	require.True(t, d.Allowed())
}
