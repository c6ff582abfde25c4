package pep_test

import (
	"crypto/rand"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/pep"
)

// TestDPoPSlowClientCallPassesAfterNonceRotation (a-dpop14 F1): a
// server that checks proofs with dpop.Verifier (real clock, no store,
// WithNonces) and a client whose clock runs 30 s slow (inside the 60 s
// window, so its proofs are dated before the Verifier began and need
// "server~start"). Once the server's nonce goes stale, the Verifier's
// use_dpop_nonce answer to "old~start" still carries the start nonce, so
// the client's one resend passes. Before the fix it carried the bare new
// nonce, the resend was asked again, and the valid token's call failed.
func TestDPoPSlowClientCallPassesAfterNonceRotation(t *testing.T) {
	t.Parallel()
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	slow := signer.WithClock(func() time.Time { return time.Now().Add(-30 * time.Second) })
	rot := &gatewaytest.RotatingNonces{}
	v, err := dpop.NewVerifier(dpop.WithNonces(rot))
	require.NoError(t, err)
	srv := gatewaytest.Start(t, gatewaytest.Verifying(v, signer.Thumbprint(),
		`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))

	c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithCache(0, 0, 0))
	c.SetDPoPToken("dpop-bound-token", slow)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err, "first call: one nonce resend passes")
	require.True(t, d.Allowed())

	rot.Rotate() // the server's nonce rotates, as every nonce source does
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err, "a valid token's call after a nonce rotation fails")
	require.True(t, d.Allowed())
}

// TestDPoPSlowClientPassesBehindReplicas (a-dpop15 F4): gateway
// replicas, each checking proofs with its own dpop.Verifier (real clock,
// no store, as the Verifier's doc says of replicas), sharing an HMAC nonce
// secret or asking no nonce, behind a round-robin balancer, and a client
// whose clock runs 5 s slow. A replica started within those 5 s asks for
// "next~start" with its own start nonce; the client's one resend lands on
// the other replica. Before the fix that replica refused the whole
// "next~startA" as a stale nonce: with the other replica started long
// before, every call of the valid token failed for as long as the lag
// lasted; with both started within it, too. Now a replica takes another's
// start nonce off, judges the server's nonce as its own, and hands the
// other's start nonce on with its own answer, so that each replica finds
// its own on the client's next call. Left (CHANGELOG Known issues): with
// two replicas both started within the client's lag and no nonce yet, the
// first call is refused, since neither can tell the other's start nonce
// from a forged one.
func TestDPoPSlowClientPassesBehindReplicas(t *testing.T) {
	t.Parallel()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	for _, tc := range []struct {
		name       string
		withNonces bool
		replicas   int
		// bothFresh: the second replica was started within the client's
		// lag too; otherwise it plays one started long before (its own
		// clock, WithClock: no proof is dated before it began).
		bothFresh bool
	}{
		{"one replica, shared HMAC nonces", true, 1, true},
		{"one replica, no nonces", false, 1, true},
		{"one restarted, shared HMAC nonces", true, 2, false},
		{"one restarted, no nonces", false, 2, false},
		{"both restarted, shared HMAC nonces", true, 2, true},
		{"both restarted, no nonces", false, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key, err := dpop.GenerateKey()
			require.NoError(t, err)
			slow := key.WithClock(func() time.Time { return time.Now().Add(-5 * time.Second) })
			const answer = `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`
			replicas := make([]http.HandlerFunc, tc.replicas)
			for i := range replicas {
				var opts []dpop.Option
				if tc.withNonces {
					nonces, err := dpop.NewHMACNonces(secret, time.Minute)
					require.NoError(t, err)
					opts = append(opts, dpop.WithNonces(nonces))
				}
				if i == 1 && !tc.bothFresh {
					opts = append(opts, dpop.WithClock(time.Now))
				}
				v, err := dpop.NewVerifier(opts...)
				require.NoError(t, err)
				replicas[i] = gatewaytest.Verifying(v, key.Thumbprint(), answer)
			}
			var turn atomic.Uint64
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				replicas[(turn.Add(1)-1)%uint64(len(replicas))](w, r) // round robin
			})

			c := mustPep(t, srv.URL, testRealm, testClient, pep.WithHTTPClient(srv.Client()), pep.WithCache(0, 0, 0))
			c.SetDPoPToken("dpop-bound-token", slow)
			for i := range 6 {
				d, err := c.Check(t.Context(), "orders", "read")
				if err == nil {
					err = d.Cause
				}
				if i == 0 && tc.replicas == 2 && tc.bothFresh {
					// The known issue: may be refused, and then fails closed.
					require.True(t, err == nil || !d.Allowed(), "call 1 was refused yet allowed")
					continue
				}
				require.NoError(t, err, "call %d of a valid token with fresh proofs", i+1)
				require.True(t, d.Allowed(), "call %d", i+1)
			}
		})
	}
}
