package authzen_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// hangingKey is a crypto.Signer whose Sign waits until release is closed:
// a KMS or HSM key whose service hangs. It says on signing when a
// signature begins.
type hangingKey struct {
	*ecdsa.PrivateKey
	release <-chan struct{}
	signing chan<- struct{}
}

func (k hangingKey) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	select {
	case k.signing <- struct{}{}:
	default:
	}
	<-k.release
	return k.PrivateKey.Sign(r, digest, opts)
}

// TestSlowDPoPKeyIsBoundByTheDeadline: the PEP's DPoP key, KMS-backed,
// hangs; Evaluate returns by its deadline (WithTimeout, 200 ms) while the
// key still signs, denied with a Cause matching ErrUnavailable and
// context.DeadlineExceeded, sending nothing and leaving the breaker
// (which opens on one failure here) closed.
func TestSlowDPoPKeyIsBoundByTheDeadline(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"))
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	release, signing := make(chan struct{}), make(chan struct{}, 1)
	t.Cleanup(func() { close(release) })
	signer, err := dpop.NewSigner(hangingKey{PrivateKey: priv, release: release, signing: signing})
	require.NoError(t, err)

	const timeout = 200 * time.Millisecond
	c, err := authzen.New(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()), authzen.WithTimeout(timeout),
		authzen.WithRetry(0, 0, 0), authzen.WithBreaker(1, time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	c.SetDPoPToken(srv.Token("todo", "service-account-todo-api", mockserver.TokenDPoPBinding(signer.Thumbprint())), signer)
	require.NoError(t, c.Discover(t.Context()))
	sent := c.Stats().PDPRequests

	type result struct {
		d   authzen.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := c.Evaluate(context.Background(), todoRead)
		done <- result{d, err}
	}()
	<-signing // the proof is being signed, and the key will not return
	var r result
	select {
	case r = <-done:
	case <-time.After(50 * timeout): // a bound of the test's own, not a synchronisation
		t.Fatalf("Evaluate did not return while the DPoP key hung, %v after it began; its deadline is %v", 50*timeout, timeout)
	}
	require.NoError(t, r.err)
	assert.False(t, r.d.Allowed())
	require.ErrorIs(t, r.d.Cause, authzen.ErrUnavailable)
	require.ErrorIs(t, r.d.Cause, context.DeadlineExceeded)
	assert.Equal(t, sent, c.Stats().PDPRequests, "a request went out although its proof was never signed")
	assert.Equal(t, authzen.BreakerState(pep.BreakerClosed), c.Stats().Breaker, "a slow DPoP key counted against the breaker")
}
