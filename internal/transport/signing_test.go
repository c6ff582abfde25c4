package transport

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
)

// hangingKey is a crypto.Signer whose Sign waits until release is closed:
// a KMS or HSM key whose service hangs. It counts the signatures asked of
// it and says on started when one begins.
type hangingKey struct {
	*ecdsa.PrivateKey
	release <-chan struct{}
	started chan<- struct{}
	asked   *atomic.Int32
}

func (k hangingKey) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	k.asked.Add(1)
	k.started <- struct{}{}
	<-k.release
	return k.PrivateKey.Sign(r, digest, opts)
}

// TestHungKeyHoldsBoundedSignatures: a DPoP key that hangs holds each call
// that asks it for a proof only until the call gives up. Once maxAbandoned
// signatures that calls gave up on are outstanding, the key is asked for
// no other: later calls fail at once, matching ErrUnavailable, so a hung
// KMS cannot pile up goroutines. When they return, the key is asked again.
func TestHungKeyHoldsBoundedSignatures(t *testing.T) {
	t.Parallel()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	release, started := make(chan struct{}), make(chan struct{}, maxAbandoned+2)
	var asked atomic.Int32
	s, err := dpop.NewSigner(hangingKey{PrivateKey: priv, release: release, started: started, asked: &asked})
	require.NoError(t, err)
	require.False(t, s.InMemory())
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})

	const url = "https://gateway.example/authorize"
	for i := range maxAbandoned {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-started
			cancel() // the call gives up while the key signs
		}()
		proof, err := prove(ctx, s, "POST", url, "a-token", "")
		cancel()
		assert.Empty(t, proof)
		require.ErrorIs(t, err, ErrUnavailable, "signature %d", i)
		require.ErrorIs(t, err, context.Canceled, "signature %d", i)
	}
	require.Equal(t, int32(maxAbandoned), asked.Load())

	for range 2 {
		proof, err := prove(t.Context(), s, "POST", url, "a-token", "")
		assert.Empty(t, proof)
		require.ErrorIs(t, err, ErrUnavailable)
		require.NotErrorIs(t, err, context.Canceled, "the call waited for a key taken as hung")
	}
	assert.Equal(t, int32(maxAbandoned), asked.Load(), "a key taken as hung was asked for another signature")

	abandoned.Lock()
	returned := abandoned.keys[s].returned
	abandoned.Unlock()
	close(release)
	released = true
	<-returned // every abandoned signature has returned

	proof, err := prove(t.Context(), s, "POST", url, "a-token", "")
	require.NoError(t, err)
	assert.NotEmpty(t, proof)
	assert.Zero(t, stuck(s))
}

// panickingKey is a crypto.Signer whose Sign panics: a broken KMS client.
type panickingKey struct{ *ecdsa.PrivateKey }

func (panickingKey) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	panic("the KMS client broke")
}

// TestPanickingKeyFailsTheCallClosed: a key that is not held in memory
// signs on a goroutine of the client's own, where a panic would end the
// process; a key that panics instead fails its call with an error, which
// the Exchanger turns into a fail-closed Cause.
func TestPanickingKeyFailsTheCallClosed(t *testing.T) {
	t.Parallel()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	s, err := dpop.NewSigner(panickingKey{priv})
	require.NoError(t, err)
	proof, err := prove(t.Context(), s, "POST", "https://gateway.example/authorize", "a-token", "")
	assert.Empty(t, proof)
	require.ErrorIs(t, err, errKeyPanicked)
	assert.Zero(t, stuck(s))
}
