package pep_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// countedKey is a KMS key whose service hangs, as slowKey, that counts
// the signatures under way and says on started when each one begins.
type countedKey struct {
	*ecdsa.PrivateKey
	release <-chan struct{}
	started chan<- struct{}
	inSign  *atomic.Int64
}

func (k countedKey) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	k.inSign.Add(1)
	defer k.inSign.Add(-1)
	k.started <- struct{}{}
	<-k.release
	return k.PrivateKey.Sign(r, digest, opts)
}

// TestHungKeyBoundIsSharedByEverySignerOfIt: SetDPoPToken promises that a
// key makes at most 16 signatures at once across every client using it,
// so that a hung KMS key holds at most 16 goroutines. pep and authzen
// clients given different Signers of one hung key (dpop.NewSigner called
// on it twice, and Signer.WithClock copies of each) share those 16: once
// calls through some of them have taken every slot, a call through any
// other, or through a Signer made afresh, waits for a slot until its
// deadline and the key is asked for nothing more. Keyed by Signer, each
// copy had 16 slots of its own. Once the key answers, every client signs
// again.
func TestHungKeyBoundIsSharedByEverySignerOfIt(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("../authzen/testdata/todo/orgauthz-fixture.json"))
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	release, started := make(chan struct{}), make(chan struct{}, 64)
	var inSign atomic.Int64
	key := countedKey{PrivateKey: priv, release: release, started: started, inSign: &inSign}
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	newSigner := func() *dpop.Signer {
		s, err := dpop.NewSigner(key)
		require.NoError(t, err)
		return s
	}
	base, again := newSigner(), newSigner()
	later := func() time.Time { return time.Now().Add(time.Second) }

	const user = "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
	binding := mockserver.TokenDPoPBinding(base.Thumbprint())
	pepClient := func(s *dpop.Signer) func(context.Context) error {
		c, err := hangguard.NewPep(srv.URL, "todo", "todo-api", pep.WithHTTPClient(srv.Client()), noRetry, pep.WithCache(0, 0, 0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		c.SetDPoPToken(srv.Token("todo", user, binding), s)
		return func(ctx context.Context) error {
			d, err := c.Check(ctx, "todo", "can_read_todos")
			require.NoError(t, err)
			return d.Cause
		}
	}
	authzenClient := func(s *dpop.Signer) func(context.Context) error {
		c, err := hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()),
			authzen.WithRetry(0, 0, 0), authzen.WithCache(0, 0, 0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		c.SetDPoPToken(srv.Token("todo", "service-account-todo-api", binding), s)
		require.NoError(t, c.Discover(t.Context()))
		req := authzen.Request{
			Subject:  authzen.Subject{Type: "user", ID: user},
			Action:   authzen.Action{Name: "can_read_todos"},
			Resource: authzen.Resource{Type: "todo", ID: "todo-1"},
		}
		return func(ctx context.Context) error {
			d, err := c.Evaluate(ctx, req)
			require.NoError(t, err)
			return d.Cause
		}
	}
	clients := []struct {
		name string
		call func(context.Context) error
	}{
		{"pep, NewSigner", pepClient(base)},
		{"authzen, NewSigner again", authzenClient(again)},
		{"pep, WithClock copy", pepClient(base.WithClock(later))},
		{"authzen, WithClock copy", authzenClient(again.WithClock(later))},
	}

	// pep.ErrUnavailable is authzen.ErrUnavailable: both clients' causes
	// are checked against it. 16 calls, spread over the clients, each giving up once its
	// signature began, take every slot of the key.
	for i := range 16 {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-started
			cancel()
		}()
		cause := clients[i%len(clients)].call(ctx)
		cancel()
		require.ErrorIs(t, cause, pep.ErrUnavailable, "call %d", i)
		require.ErrorIs(t, cause, context.Canceled, "call %d", i)
	}
	require.Equal(t, int64(16), inSign.Load())

	// A call through any Signer of the key waits for a slot until its
	// deadline; the key is asked for no other signature.
	clients = append(clients, struct {
		name string
		call func(context.Context) error
	}{"pep, a Signer made afresh", pepClient(newSigner())})
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			cause := c.call(ctx)
			require.ErrorIs(t, cause, pep.ErrUnavailable)
			require.ErrorIs(t, cause, context.DeadlineExceeded)
			assert.Len(t, started, 0, "a hung key with every slot taken was asked for another signature")
		})
	}
	assert.Equal(t, int64(16), inSign.Load(), "signatures under way on the one hung key")

	// The key answers: every client signs again and has its decision.
	close(release)
	released = true
	for _, c := range clients {
		t.Run(c.name+", the key answering", func(t *testing.T) {
			require.NoError(t, c.call(t.Context()))
		})
	}
}

// claimingKey is a crypto.Signer that claims pub, anyone's public key, and
// whose service hangs until release is closed, saying on started when each
// signature begins: another tenant's remote signer configured with the
// victim's public JWK, or the hung region of a multi-region KMS key.
type claimingKey struct {
	pub     crypto.PublicKey
	release <-chan struct{}
	started chan<- struct{}
}

func (k claimingKey) Public() crypto.PublicKey { return k.pub }
func (k claimingKey) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	k.started <- struct{}{}
	<-k.release
	return nil, io.ErrUnexpectedEOF
}

// workingKey is a KMS key that answers at once: not held in memory as the
// standard library's keys are, so it signs on a goroutine of its own,
// within the bound.
type workingKey struct{ *ecdsa.PrivateKey }

// TestAKeyClaimingAnothersPublicKeyLocksNoOneOut (a-fix9c F3): the 16
// signatures at once are a signer's, not a public key's: a client whose
// crypto.Signer claims B's public key and hangs, with all of its 16 slots
// taken for as long as it hangs, leaves a client signing with B's working
// key its decisions. Keyed by thumbprint, B's calls waited for a slot
// until their deadline and were denied.
func TestAKeyClaimingAnothersPublicKeyLocksNoOneOut(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("../authzen/testdata/todo/orgauthz-fixture.json"))
	privB, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	victim, err := dpop.NewSigner(workingKey{privB})
	require.NoError(t, err)
	release, started := make(chan struct{}), make(chan struct{}, 16)
	t.Cleanup(func() { close(release) })
	claimant, err := dpop.NewSigner(claimingKey{pub: privB.Public(), release: release, started: started})
	require.NoError(t, err)
	require.Equal(t, victim.Thumbprint(), claimant.Thumbprint())

	const user = "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
	client := func(s *dpop.Signer) *pep.Client {
		c, err := hangguard.NewPep(srv.URL, "todo", "todo-api", pep.WithHTTPClient(srv.Client()), noRetry, pep.WithCache(0, 0, 0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		c.SetDPoPToken(srv.Token("todo", user, mockserver.TokenDPoPBinding(s.Thumbprint())), s)
		return c
	}
	claiming, working := client(claimant), client(victim)

	// 16 calls through the claimant, each giving up once its signature
	// began, take every slot it has.
	for i := range 16 {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-started
			cancel()
		}()
		d, err := claiming.Check(ctx, "todo", "can_read_todos")
		cancel()
		require.NoError(t, err)
		require.ErrorIs(t, d.Cause, pep.ErrUnavailable, "call %d", i)
		require.ErrorIs(t, d.Cause, context.Canceled, "call %d", i)
	}

	// B's client has its decision. The deadline only keeps a failing run
	// from waiting forever.
	for i := range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		d, err := working.Check(ctx, "todo", "can_read_todos")
		cancel()
		require.NoError(t, err)
		require.NoError(t, d.Cause, "call %d of B's working key", i)
		require.Equal(t, pep.Grant, d.Status)
	}
	assert.Len(t, started, 0, "the hung claimant was asked for another signature")
}
