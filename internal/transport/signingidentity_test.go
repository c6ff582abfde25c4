package transport

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
)

// claimingKey is a crypto.Signer that says its public key is pub (anyone's:
// a public key is public) and whose Sign hangs until release is closed: a
// tenant's remote signer configured with another tenant's public JWK, or
// the hung region of a multi-region KMS key, that never answers.
type claimingKey struct {
	pub     crypto.PublicKey
	release <-chan struct{}
	started chan<- struct{}
}

func (k claimingKey) Public() crypto.PublicKey { return k.pub }
func (k claimingKey) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	k.started <- struct{}{}
	<-k.release
	return nil, errors.New("the claimed key never signs")
}

// TestAKeyClaimingAnothersPublicKeySharesNoBound (a-fix9c F3): the bound
// of maxSigning signatures and the hang detector are shared by what is one
// signer, never by what merely claims one public key: crypto.Signer.Public
// proves nothing. A Signer whose crypto.Signer claims B's public key and
// hangs, with every one of its slots taken for over hungAfter, leaves B's
// working Signer (another crypto.Signer of B's key: a KMS key's failover
// region, or the tenant who holds it) its own slots, and B signs. Keyed by
// thumbprint, B was refused for as long as the claimant hung, and at once
// past hungAfter.
func TestAKeyClaimingAnothersPublicKeySharesNoBound(t *testing.T) {
	t.Parallel()
	privB := p256Key(t)
	victim := mustSigner(t, remoteKey{privB})
	release, started := make(chan struct{}), make(chan struct{}, maxSigning)
	t.Cleanup(func() { close(release) })
	claimant := mustSigner(t, claimingKey{pub: privB.Public(), release: release, started: started})
	require.Equal(t, victim.Thumbprint(), claimant.Thumbprint(), "the claimant's proofs would carry B's public key")

	// maxSigning calls through the claimant, each giving up once its
	// signature began, take every slot it has.
	const url = "https://gateway.example/authorize"
	for i := range maxSigning {
		_, err := proveGivingUp(t, claimant, started, "claimant-token")
		require.ErrorIs(t, err, context.Canceled, "signature %d", i)
	}
	held := enterKey(claimant)
	held.leave(claimant)
	keys.Lock()
	taken := len(held.slots)
	keys.Unlock()
	require.Equal(t, maxSigning, taken)
	require.True(t, held.hung(time.Now().Add(hungAfter+time.Second)), "the claimant is not taken as hung")

	verifier, err := dpop.NewVerifier()
	require.NoError(t, err)
	// B's Signer, and every copy of it, has slots of its own, is not taken
	// as hung past hungAfter, and signs.
	for _, s := range []*dpop.Signer{victim, victim.WithClock(func() time.Time { return time.Now().Add(time.Second) })} {
		ks := enterKey(s)
		ks.leave(s)
		require.NotSame(t, held, ks, "B's Signer shares the bound of a key that only claims B's public key")
		assert.False(t, ks.hung(time.Now().Add(hungAfter+time.Second)), "B's working key is taken as hung")
		// The deadline only keeps a failing run from waiting forever.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		proof, err := prove(ctx, s, "POST", url, "victim-token", "")
		cancel()
		require.NoError(t, err, "B's working key is refused because another key claimed its public key and hangs")
		_, err = verifier.Verify(t.Context(), dpop.Request{Proofs: []string{proof}, Method: "POST", URL: url, AccessToken: "victim-token", JKT: victim.Thumbprint()})
		require.NoError(t, err)
	}
}

// unhashableKey is a crypto.Signer of a type that cannot be a map key.
type unhashableKey struct {
	crypto.Signer
	labels []string
}

// TestSignerBoundIdentity: what shares a bound is one signer. Signers
// NewSigner made of one comparable crypto.Signer value, and the copies
// WithClock makes of them, share one; two crypto.Signers of one public key
// do not. A key that cannot be compared (a type with a slice, a
// comparable type holding an uncomparable value, a value not equal to
// itself) is one signer per NewSigner: its WithClock copies share the
// original's bound, another NewSigner of it has its own, and none panics.
func TestSignerBoundIdentity(t *testing.T) {
	t.Parallel()
	priv := p256Key(t)
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	edPub := edPriv.Public() // ed25519.PublicKey: a slice
	for _, tc := range []struct {
		name   string
		key    func() crypto.Signer
		shared bool // whether NewSigner called twice on it shares a bound
	}{
		{"a comparable value", func() crypto.Signer { return remoteKey{priv} }, true},
		{"a pointer", func() crypto.Signer { return &unhashableKey{Signer: priv} }, true},
		{"an uncomparable type", func() crypto.Signer { return unhashableKey{Signer: priv, labels: []string{"kms"}} }, false},
		{"a comparable type holding a slice", func() crypto.Signer { return claimingKey{pub: edPub} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.key()
			a := mustSigner(t, key)
			b := mustSigner(t, key)
			ka := enterKey(a)
			for _, s := range []*dpop.Signer{a.WithClock(nil), a.WithClock(time.Now).WithClock(nil)} {
				e := enterKey(s)
				assert.Same(t, ka, e, "a WithClock copy has a bound of its own")
				e.leave(s)
			}
			kb := enterKey(b)
			if tc.shared {
				assert.Same(t, ka, kb, "two Signers of one crypto.Signer value have bounds of their own")
			} else {
				assert.NotSame(t, ka, kb)
			}
			kb.leave(b)
			ka.leave(a)
			<-ka.idle
			<-kb.idle
			other := mustSigner(t, remoteKey{priv})
			ko := enterKey(other)
			defer ko.leave(other)
			if _, same := key.(remoteKey); !same {
				assert.NotSame(t, ka, ko, "another crypto.Signer of the same public key shares the bound")
			}
		})
	}
}
