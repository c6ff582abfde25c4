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
	"github.com/orgauthz/orgauthz/internal/testkit"
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
	priv := testkit.Must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))(t)
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
		return testkit.Must(dpop.NewSigner(key))(t)
	}
	base, again := newSigner(), newSigner()
	later := func() time.Time { return time.Now().Add(time.Second) }

	const user = "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
	binding := mockserver.TokenDPoPBinding(base.Thumbprint())
	pepClient := func(s *dpop.Signer) func(context.Context) error {
		c := mustPep(t, srv.URL, "todo", "todo-api", pep.WithHTTPClient(srv.Client()), noRetry, pep.WithCache(0, 0, 0))
		c.SetDPoPToken(srv.Token("todo", user, binding), s)
		return func(ctx context.Context) error {
			d := checkedIn(t, c, ctx, "todo", "can_read_todos")
			return d.Cause
		}
	}
	authzenClient := func(s *dpop.Signer) func(context.Context) error {
		c := testkit.Must(hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()),
			authzen.WithRetry(0, 0, 0), authzen.WithCache(0, 0, 0)))(t)
		t.Cleanup(func() { _ = c.Close() })
		c.SetDPoPToken(srv.Token("todo", "service-account-todo-api", binding), s)
		require.NoError(t, c.Discover(t.Context()))
		req := authzen.Request{
			Subject:  authzen.Subject{Type: "user", ID: user},
			Action:   authzen.Action{Name: "can_read_todos"},
			Resource: authzen.Resource{Type: "todo", ID: "todo-1"},
		}
		return func(ctx context.Context) error {
			d := testkit.Must(c.Evaluate(ctx, req))(t)
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
