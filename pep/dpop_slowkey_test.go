package pep_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// slowKey is a crypto.Signer whose Sign waits until release is closed: a
// KMS or HSM key (which dpop.NewSigner supports) whose service is slow or
// hanging. crypto.Signer takes no context. It says on signing when a
// signature begins.
type slowKey struct {
	*ecdsa.PrivateKey
	release <-chan struct{}
	signing chan<- struct{}
}

func (k slowKey) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	select {
	case k.signing <- struct{}{}:
	default:
	}
	<-k.release
	return k.PrivateKey.Sign(r, digest, opts)
}

// newSlowSigner returns a DPoP signer over a slowKey, released when the
// test ends unless the test released it, and the key's channels.
func newSlowSigner(t *testing.T) (signer *dpop.Signer, release func(), signing <-chan struct{}) {
	t.Helper()
	priv := testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(t)
	rel, sig := make(chan struct{}), make(chan struct{}, 1)
	signer = testkit.Must(dpop.NewSigner(slowKey{PrivateKey: priv, release: rel, signing: sig}))(t)
	released := false
	release = func() {
		if !released {
			released = true
			close(rel)
		}
	}
	t.Cleanup(release)
	return signer, release, sig
}

// TestSlowDPoPKeyIsBoundByTheDeadline: a KMS-backed DPoP key that hangs
// holds a Check only until the call's deadline (WithTimeout, 200 ms), not
// for as long as the key does (rule 10): the Check returns while the key
// still signs, DENY with a Cause matching pep.ErrUnavailable and
// context.DeadlineExceeded. Nothing is sent, and the breaker, which opens
// on one failure here, does not count it: a slow key is not a failing
// gateway. Once the key signs again, so does the client.
func TestSlowDPoPKeyIsBoundByTheDeadline(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	signer, release, signing := newSlowSigner(t)
	tok := g.token(t, "alice", mockserver.TokenDPoPBinding(signer.Thumbprint()))

	const timeout = 200 * time.Millisecond
	c := g.newClient(t, pep.WithTimeout(timeout), noRetry, pep.WithCache(0, 0, 0), pep.WithBreaker(1, time.Hour))
	c.SetDPoPToken(tok, signer)

	type result struct {
		d   pep.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := c.Check(context.Background(), "orders", "read")
		done <- result{d, err}
	}()
	<-signing // the proof is being signed, and the key will not return
	var r result
	select {
	case r = <-done:
	case <-time.After(50 * timeout): // a bound of the test's own, not a synchronisation
		t.Fatalf("Check did not return while the DPoP key hung, %v after it began; its deadline is %v", 50*timeout, timeout)
	}
	require.NoError(t, r.err)
	assert.False(t, r.d.Allowed())
	assert.Equal(t, pep.Deny, r.d.Status)
	require.ErrorIs(t, r.d.Cause, pep.ErrUnavailable)
	require.ErrorIs(t, r.d.Cause, context.DeadlineExceeded)
	assert.Zero(t, g.count(), "a request went out although its proof was never signed")
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker, "a slow DPoP key counted against the breaker")

	release()
	// The same client, whose timeout is 200 ms, answers clean calls again.
	// A call that a loaded machine holds past those 200 ms fails closed for
	// its deadline, which says nothing about the key: such a call is made
	// again, a bounded number of times; any other outcome is the answer.
	var d pep.Decision
	for range 20 {
		d = checked(t, c, "orders", "read")
		if !errors.Is(d.Cause, context.DeadlineExceeded) {
			break
		}
		t.Logf("a clean call ran out of the client's %v on this machine: made again", timeout)
	}
	requireGatewayDecision(t, d, pep.Grant)
}
