package transport

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// mustSigner is dpop.NewSigner, failing the test on an error.
func mustSigner(t testing.TB, key crypto.Signer) *dpop.Signer {
	t.Helper()
	return testkit.Must(dpop.NewSigner(key))(t)
}

// p256Key is a new P-256 key, failing the test on an error.
func p256Key(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	return testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(t)
}

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
// that asks it for a proof only until the call gives up, and makes at most
// maxSigning signatures at once: a call finding every slot taken waits for
// one only until its context ends, and the key is asked for nothing more,
// so a hung KMS cannot pile up goroutines. Once every slot has been taken
// for longer than hungAfter, calls fail at once. When the key returns, it
// is asked again.
func TestHungKeyHoldsBoundedSignatures(t *testing.T) {
	t.Parallel()
	priv := p256Key(t)
	release, started := make(chan struct{}), make(chan struct{}, maxSigning+2)
	var asked atomic.Int32
	s := mustSigner(t, hangingKey{PrivateKey: priv, release: release, started: started, asked: &asked})
	require.False(t, s.InMemory())
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})

	const url = "https://gateway.example/authorize"
	for i := range maxSigning {
		proof, err := proveGivingUp(t, s, started, "a-token")
		assert.Empty(t, proof)
		require.ErrorIs(t, err, ErrUnavailable, "signature %d", i)
		require.ErrorIs(t, err, context.Canceled, "signature %d", i)
	}
	require.Equal(t, int32(maxSigning), asked.Load())

	// Every slot is taken: a call waits for one until its context ends.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	proof, err := prove(ctx, s, "POST", url, "a-token", "")
	assert.Empty(t, proof)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(maxSigning), asked.Load(), "a key with every slot taken was asked for another signature")

	keys.Lock()
	ks := keys.m[keyID(s)]
	keys.Unlock()
	require.NotNil(t, ks)
	assert.False(t, ks.hung(time.Now()), "a key is taken as hung only once every slot was taken for hungAfter")
	assert.True(t, ks.hung(time.Now().Add(hungAfter+time.Second)), "a key whose every slot was taken for hungAfter is hung")

	close(release)
	released = true
	<-ks.idle // every signature has returned

	proof = testkit.Must(prove(t.Context(), s, "POST", url, "a-token", ""))(t)
	assert.NotEmpty(t, proof)
}

// TestHangUpsDoNotLockOutASlowKey: callers hanging up while a slow but
// working key signs cost no other caller anything: their signatures give
// their slots back when the key answers, and a caller that waits gets its
// proof. Four hang-ups used to make the key "taken as hung", and every
// caller refused at once, for as long as anyone kept hanging up.
func TestHangUpsDoNotLockOutASlowKey(t *testing.T) {
	t.Parallel()
	priv := p256Key(t)
	release, started := make(chan struct{}), make(chan struct{}, 8)
	var asked atomic.Int32
	s := mustSigner(t, hangingKey{PrivateKey: priv, release: release, started: started, asked: &asked})
	const url = "https://gateway.example/authorize"
	for range 4 {
		_, err := proveGivingUp(t, s, started, "a-token")
		require.ErrorIs(t, err, context.Canceled)
	}
	got := make(chan error, 1)
	go func() {
		proof, err := prove(t.Context(), s, "POST", url, "a-token", "")
		if err == nil && proof == "" {
			err = errors.New("no proof")
		}
		got <- err
	}()
	select {
	case <-started: // the waiting caller's signature began: it was not refused
	case err := <-got:
		t.Fatalf("a caller was refused after others hung up: %v", err)
	}
	close(release)
	require.NoError(t, <-got)
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
	priv := p256Key(t)
	s := mustSigner(t, panickingKey{priv})
	proof, err := prove(t.Context(), s, "POST", "https://gateway.example/authorize", "a-token", "")
	assert.Empty(t, proof)
	require.ErrorIs(t, err, errKeyPanicked)
	keys.Lock()
	_, held := keys.m[keyID(s)]
	keys.Unlock()
	assert.False(t, held, "the key's slot came back")
}

// proveGivingUp has signer prove a request with token under a context
// cancelled once the key began signing (started): the call gives up while
// the key signs.
func proveGivingUp(t *testing.T, signer *dpop.Signer, started <-chan struct{}, token string) (string, error) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	return prove(ctx, signer, "POST", "https://gateway.example/authorize", token, "")
}
