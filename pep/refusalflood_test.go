package pep_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

// upSubscription is the Subscribe of a channel that is up: it beats once
// and holds until the client stops it.
type upSubscription struct{}

func (upSubscription) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	r.Heartbeat(time.Now())
	<-ctx.Done()
	return ctx.Err()
}

// gatedPublisher's Publish holds until open is closed (or its context
// ends), or, with open nil, fails until up; then it takes the message.
type gatedPublisher struct {
	upSubscription
	open chan struct{}
	up   time.Time
	mu   sync.Mutex
	msgs [][]byte
}

func (p *gatedPublisher) Publish(ctx context.Context, msg []byte) error {
	if p.open == nil {
		if time.Now().Before(p.up) {
			return errors.New("redis: connection refused")
		}
	} else {
		select {
		case <-p.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, bytes.Clone(msg))
	return nil
}

// taken returns the messages taken so far and how many of them purge
// every replica's whole cache.
func (p *gatedPublisher) taken() (n, all int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.msgs {
		if bytes.Equal(m, []byte{1, 'a'}) { // the wire format: version 1, kind 'a'
			all++
		}
	}
	return len(p.msgs), all
}

// More refused tokens than wait to be published (1,024, the channel
// stalled) are replaced by one purge of every replica's whole cache,
// published once the channel takes it: a flood of refusals, which anyone
// can send, costs the other replicas their caches, once, and never drops
// a refused token's purge. The replacement is counted.
func TestARefusalFloodBecomesOnePurgeOfEveryCache(t *testing.T) {
	t.Parallel()
	const tokens = 64 + 1024 + 100 // past the publishers and the queue
	inv := &gatedPublisher{open: make(chan struct{})}
	c := refusedClient(t, inv)
	for i := range tokens {
		_, err := c.Check(pep.WithToken(t.Context(), fmt.Sprintf("junk-%d", i)), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	}
	require.Equal(t, uint64(1), c.Stats().InvalidationRefusalOverflows, "one purge of every cache waits, covering every refusal after it")
	close(inv.open)
	require.Eventually(t, func() bool { _, all := inv.taken(); return all == 1 }, 10*time.Second, time.Millisecond,
		"the purge of every replica's cache was not published")
	n, all := inv.taken()
	require.Equal(t, 1, all)
	// The publications under way when the queue overflowed, two messages
	// each, and the purge of every cache: not one per refused token.
	require.LessOrEqual(t, n, 2*64+1)
}

// A refusal that waits longer than a second for a publisher (every one
// of them held by a channel that hangs) is not left behind the backlog:
// what waits becomes one purge of every replica's whole cache, published
// as soon as the channel takes anything.
func TestARefusalThatWaitsTooLongBecomesAPurgeOfEveryCache(t *testing.T) {
	t.Parallel()
	const tokens = 64 + 10 // past the publishers, far below the queue's bound
	inv := &gatedPublisher{open: make(chan struct{})}
	c := refusedClient(t, inv)
	for i := range tokens {
		_, err := c.Check(pep.WithToken(t.Context(), fmt.Sprintf("revoked-%d", i)), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	}
	require.Zero(t, c.Stats().InvalidationRefusalOverflows)
	// The publications time out (2 s) and are given back; the next take
	// finds the ten that waited all along.
	require.Eventually(t, func() bool { return c.Stats().InvalidationRefusalOverflows == 1 }, 10*time.Second, time.Millisecond)
	close(inv.open)
	require.Eventually(t, func() bool { _, all := inv.taken(); return all == 1 }, 10*time.Second, time.Millisecond,
		"the purge of every replica's cache was not published")
}
