package authzen_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/invalidation"
)

// channel is an in-process invalidation channel: every publication, and
// every heartbeat the test makes, reaches every subscriber, in order.
type channel struct {
	mu     sync.Mutex
	subs   []invalidation.Receiver
	joined chan struct{}
}

func (ch *channel) Publish(_ context.Context, msg []byte) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, r := range ch.subs {
		r.Message(msg)
	}
	return nil
}

func (ch *channel) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	ch.mu.Lock()
	ch.subs = append(ch.subs, r)
	ch.mu.Unlock()
	ch.joined <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// TrustWindow makes the heartbeats good for an hour, so that a loaded
// machine does not outrun the window of this test on the real clock.
func (ch *channel) TrustWindow() time.Duration { return time.Hour }

func (ch *channel) beat(sent time.Time) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, r := range ch.subs {
		r.Heartbeat(sent)
	}
}

// TestInvalidatorAcrossPEPs: authzen clients share purges as pep's do: a
// Purge on one drops the token's cached decisions on the other, PurgeAll
// drops everything, and nothing cached is served before a heartbeat.
func TestInvalidatorAcrossPEPs(t *testing.T) {
	t.Parallel()
	ch := &channel{joined: make(chan struct{}, 2)}
	srv, a := startTodo(t, authzen.WithInvalidator(ch))
	t.Cleanup(func() { _ = a.Close() })
	b, err := hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()), authzen.WithInvalidator(ch))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	tok := srv.Token("todo", "service-account-todo-api")
	b.SetToken(tok)
	<-ch.joined
	<-ch.joined

	cached := func(c *authzen.Client) bool {
		d, err := c.Evaluate(t.Context(), todoRead)
		require.NoError(t, err)
		require.True(t, d.Allowed())
		return d.Cached
	}
	for _, c := range []*authzen.Client{a, b} {
		cached(c)
		require.False(t, cached(c), "served from the cache before any heartbeat")
	}
	ch.beat(time.Now())
	for _, c := range []*authzen.Client{a, b} {
		cached(c)
		require.True(t, cached(c))
	}
	require.NoError(t, a.Purge(t.Context(), tok))
	require.False(t, cached(b), "b served the decision a purged")
	require.True(t, cached(b))
	require.NoError(t, b.PurgeAll(t.Context()))
	require.False(t, cached(a), "a served a decision after b's PurgeAll")

	ch.beat(time.Now().Add(-time.Minute)) // older than the last: nothing changes
	require.True(t, cached(a))
	require.False(t, a.Stats().CacheBypassed)
}
