package transport

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
)

// TestHungKeyBoundIsPerKeyNotPerSigner: the bound of maxSigning signatures
// and the hang detector belong to the key (the crypto.Signer value), not
// to the *dpop.Signer that wraps it. A hung KMS key wrapped by several Signers (dpop.NewSigner
// called on it again, for another client, and the copies Signer.WithClock
// makes on each clock correction) holds at most maxSigning goroutines in
// all, and one entry, however many copies there are; once the key answers,
// the entry is gone. Keyed by Signer, every copy had maxSigning slots and
// an entry of its own.
func TestHungKeyBoundIsPerKeyNotPerSigner(t *testing.T) {
	t.Parallel()
	priv := p256Key(t)
	release, started := make(chan struct{}), make(chan struct{}, 4*maxSigning)
	var asked atomic.Int32
	key := hangingKey{PrivateKey: priv, release: release, started: started, asked: &asked}
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	base := mustSigner(t, key)
	again := mustSigner(t, key)
	signers := []*dpop.Signer{base, again}
	for i := range 62 { // clock corrections of both
		s := []*dpop.Signer{base, again}[i%2]
		signers = append(signers, s.WithClock(func() time.Time { return time.Now().Add(time.Duration(i) * time.Second) }))
	}

	// maxSigning calls, spread over the Signers, each giving up once its
	// signature began, fill the key's slots.
	const url = "https://gateway.example/authorize"
	for i := range maxSigning {
		_, err := proveGivingUp(t, signers[i%len(signers)], started, "a-token")
		require.ErrorIs(t, err, context.Canceled, "signature %d", i)
	}

	// Every Signer of the key finds the same entry, every slot taken and
	// the key hung once they have been taken for hungAfter.
	ks := enterKey(base)
	ks.leave(base)
	for i, s := range signers {
		e := enterKey(s)
		e.leave(s)
		require.Same(t, ks, e, "Signer %d of the key has slots of its own", i)
	}
	keys.Lock()
	taken := len(ks.slots)
	keys.Unlock()
	assert.Equal(t, maxSigning, taken)
	assert.True(t, ks.hung(time.Now().Add(hungAfter+time.Second)), "a copy of a hung key's Signer is not taken as hung")

	// A call through any Signer of it, a fresh one included, waits for a
	// slot until its context ends, and the key is asked for nothing more.
	fresh := mustSigner(t, key)
	for _, s := range []*dpop.Signer{fresh, again.WithClock(nil), signers[len(signers)-1]} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		proof, err := prove(ctx, s, "POST", url, "a-token", "")
		cancel()
		assert.Empty(t, proof)
		require.ErrorIs(t, err, ErrUnavailable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	keys.Lock()
	taken = len(ks.slots)
	keys.Unlock()
	assert.Equal(t, maxSigning, taken, "a Signer of a key with every slot taken took another")

	// The key answers: its entry is gone, and every Signer of it signs.
	close(release)
	released = true
	<-ks.idle
	keys.Lock()
	for _, e := range keys.m {
		assert.NotSame(t, ks, e, "the entry of a key no call uses is still held")
	}
	keys.Unlock()
	assert.Equal(t, int32(maxSigning), asked.Load(), "the hung key was asked for more than maxSigning signatures")
	for _, s := range []*dpop.Signer{fresh, base, signers[len(signers)-1]} {
		proof, err := prove(t.Context(), s, "POST", url, "a-token", "")
		require.NoError(t, err)
		assert.NotEmpty(t, proof)
	}
}
