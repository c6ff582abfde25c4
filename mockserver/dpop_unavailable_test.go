package mockserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver"
)

// downNonces is a shared nonce source (WithNonces) whose store is down: it
// accepts no nonce and cannot mint one.
type downNonces struct{}

func (downNonces) Valid(context.Context, string) bool { return false }
func (downNonces) Next(context.Context) (string, error) {
	return "", errors.New("nonce store unreachable")
}

// requireNonces turns dpopNonceRequired on at replica as the platform
// admin.
func (f *front) requireNonces(replica string) {
	f.t.Helper()
	admin := f.do(replica, http.MethodPost, "/realms/master/protocol/openid-connect/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"admin-secret"}}.Encode(), nil)
	require.Equal(f.t, http.StatusOK, admin.Status, string(admin.Body))
	res := f.do(replica, http.MethodPatch, "/admin/config", "application/json", `{"dpopNonceRequired":true}`,
		http.Header{"Authorization": {"Bearer " + admin.JSON(f.t)["access_token"].(string)}})
	require.Equal(f.t, http.StatusOK, res.Status, string(res.Body))
}

// TestDPoPNonceSourceDownIsUnavailable: when the shared nonce source
// cannot mint a nonce (its store is down), a proof it refuses is the
// server's outage, not the proof's fault: 503 with Retry-After on a
// protected route and at the token endpoint (temporarily_unavailable),
// never the use_dpop_nonce challenge without a DPoP-Nonce that no client
// can meet (dpop.NonceError: "should answer 5xx").
func TestDPoPNonceSourceDownIsUnavailable(t *testing.T) {
	t.Parallel()
	f := startFront(t, []string{"a"}, mockserver.WithFixture(servertest.DPoPFixture()), mockserver.WithNonces(downNonces{}))
	signer, token := f.boundToken(t, "a")
	f.requireNonces("a")

	proof := proofOf(t, signer, http.MethodPost, f.URL+authorizePath, token, "")
	for name, res := range map[string]servertest.Result{
		"protected route": f.decide("a", token, proof),
		"token endpoint":  f.dpopToken("a", signer, ""),
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, http.StatusServiceUnavailable, res.Status, string(res.Body))
			require.Equal(t, "1", res.Header.Get("Retry-After"))
			require.NotContains(t, res.Header.Get("WWW-Authenticate"), "use_dpop_nonce")
			require.NotContains(t, string(res.Body), "use_dpop_nonce")
			require.Contains(t, string(res.Body), "nonce source is unavailable")
			require.NotContains(t, string(res.Body), token)
		})
	}
}

// TestDPoPProofRefusedForANewKeyspaceSaysWhenToRetry: a proof the shared
// store refuses because its keyspace is younger than the proofs' window
// (Redis lost its keys) is transient, unlike a token issued before the
// keyspace: 503, with a Retry-After that covers the rest of the window
// (the proofs' 10 s of skew and the clocks' minute: 70 s, and a second for
// the proofs' whole-second iat), not one second
// of which every retry is refused again.
func TestDPoPProofRefusedForANewKeyspaceSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	f, store := startStoreFront(t, mockserver.WithFixture(servertest.DPoPFixture()))
	signer, token := f.boundToken(t, "a")

	store.set(&store.failProofs, fmt.Errorf("the store restarted: %w", dpop.ErrKeyspaceNew))
	proof := proofOf(t, signer, http.MethodPost, f.URL+authorizePath, token, "")
	// the window, and a second for the proofs' whole-second iat: a proof
	// made exactly 70 s after a refusal at X.4 s is dated X+70, before the
	// keyspace's X.4+70 (a-fix8d).
	window := fmt.Sprint(int((dpop.DefaultMaxSkew + dpop.ReplayStoreMargin).Seconds()) + 1)
	for name, res := range map[string]servertest.Result{
		"protected route": f.decide("b", token, proof),
		"token endpoint":  f.dpopToken("b", signer, ""),
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, http.StatusServiceUnavailable, res.Status, string(res.Body))
			require.Equal(t, window, res.Header.Get("Retry-After"))
			require.Contains(t, string(res.Body), "keyspace is new")
		})
	}
	store.set(&store.failProofs, errors.New("connection refused")) // an outage: a second
	proof = proofOf(t, signer, http.MethodPost, f.URL+authorizePath, token, "")
	res := f.decide("a", token, proof)
	require.Equal(t, http.StatusServiceUnavailable, res.Status, string(res.Body))
	require.Equal(t, "1", res.Header.Get("Retry-After"))
}
