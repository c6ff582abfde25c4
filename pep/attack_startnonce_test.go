package pep_test

import (
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackStartNonceOfOneReplicaRefusedByAnother (a-dpop15 F4, end to
// end): two gateway replicas, each with its own dpop.Verifier (no shared
// ReplayStore, as the Verifier's doc describes for replicas), sharing an
// HMAC nonce secret or requiring no nonce, behind a round-robin balancer,
// both started (a rolling deploy) within the few seconds a DPoP client's
// clock runs slow. Every proof of that client is dated before either
// Verifier began, so each asks for its own start nonce ("next~startA"):
// the resend lands on the other replica, whose splitNonce does not find
// its own start nonce, whose Nonces refuse "next~startA" whole, and which
// asks again with "next~startB". The client's one resend is spent: a valid
// token and a fresh proof are refused (ErrProofRejected) on every call
// for as long as the client's clock lags the restart.
func TestAttackStartNonceOfOneReplicaRefusedByAnother(t *testing.T) {
	t.Parallel()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	for _, tc := range []struct {
		name       string
		withNonces bool
		one        bool // control: one replica behind the balancer
	}{{"control (one replica, shared HMAC nonces)", true, true}, {"control (one replica, no nonces)", false, true},
		{"shared HMAC nonces", true, false}, {"no nonces", false, false}} {
		withNonces := tc.withNonces
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key, err := dpop.GenerateKey()
			require.NoError(t, err)
			slow := key.WithClock(func() time.Time { return time.Now().Add(-5 * time.Second) })
			const token = "dpop-bound-token"
			var replicas [2]*dpop.Verifier
			for i := range replicas {
				var opts []dpop.Option
				if withNonces {
					nonces, err := dpop.NewHMACNonces(secret, time.Minute)
					require.NoError(t, err)
					opts = append(opts, dpop.WithNonces(nonces))
				}
				replicas[i], err = dpop.NewVerifier(opts...)
				require.NoError(t, err)
			}
			if tc.one {
				replicas[1] = replicas[0]
			}
			var turn atomic.Uint64
			var srvURL string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, _ := io.ReadAll(r.Body)
				v := replicas[turn.Add(1)%2] // round robin
				_, err := v.Verify(r.Context(), dpop.Request{
					Proofs: r.Header.Values("DPoP"), Method: r.Method, URL: srvURL + r.URL.Path,
					AccessToken: strings.TrimPrefix(r.Header.Get("Authorization"), "DPoP "), JKT: key.Thumbprint(),
				})
				if err != nil {
					var ne *dpop.NonceError
					if errors.As(err, &ne) && ne.Nonce != "" {
						w.Header().Set("DPoP-Nonce", ne.Nonce)
					}
					w.Header().Set("WWW-Authenticate", v.Challenge(err))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(`{"error":"Unauthorized","message":"` + dpop.ErrorDescription(err) + `"}`))
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
			srvURL = srv.URL

			c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithCache(0, 0, 0))
			c.SetDPoPToken(token, slow)
			refused := 0
			var last error
			for i := range 4 {
				scope := "read"
				if i%2 == 1 {
					scope = "write"
				}
				d, err := c.Check(t.Context(), "orders", scope)
				if err == nil {
					err = d.Cause
				}
				if err != nil || !d.Allowed() {
					refused++
					last = err
				}
			}
			assert.Zero(t, refused, "a valid token with fresh proofs is refused on %d of 4 calls; last: %v", refused, last)
		})
	}
}
