package pep_test

// Purge, PurgeAll, SetToken, ClearToken, Close, and
// a channel that delivers purges, floods, malformed messages, heartbeats
// and breaks, all at once, under -race. Oracle: after Purge(tok) returns
// (tok revoked at the gateway first), no Check that starts later returns a
// cached GRANT for tok; no panic, no race, no hang.

import (
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

func TestPurgeChurnNeverServesARevokedCachedGrant(t *testing.T) {
	g := startReference(t)
	b := newLongBus()
	c := b.client(t, g)
	b.Beat(time.Now())
	own := g.token(t, "alice")
	c.SetToken(own)

	// Fixed work, not a time: 2 workers of 100 rounds (a 3 s run made
	// 500 to 1,200 rounds on the shared 2-core machine, fewer beside a CPU
	// hog); the churn of the client's own token runs once a round, that of
	// the channel until the rounds are done.
	const workers, perWorker = 2, 100
	ctx := t.Context()
	var wg, churn sync.WaitGroup
	var breaks atomic.Int64
	var rounds atomic.Int64
	var done atomic.Bool
	roundDone := make(chan struct{}, 1)

	// Rounds: cache a fresh revocable token's GRANT, revoke it, Purge it,
	// and check it from several goroutines after Purge returned.
	for w := range workers {
		wg.Go(func() {
			for range perWorker {
				tok := g.token(t, "bob", mockserver.TokenClient(testClient))
				for range 2 {
					_, _ = c.Check(pep.WithToken(ctx, tok), "orders", "read")
				}
				g.revoke(t, tok)
				if w == 0 {
					_ = c.Purge(ctx, tok)
				} else {
					_ = c.PurgeAll(ctx)
				}
				var inner sync.WaitGroup
				for range 4 {
					inner.Go(func() {
						d, err := c.Check(pep.WithToken(ctx, tok), "orders", "read")
						if err == nil && d.Allowed() && d.Cached {
							breaks.Add(1)
						}
					})
				}
				inner.Wait()
				rounds.Add(1)
				select {
				case roundDone <- struct{}{}:
				default:
				}
			}
		})
	}
	// The client's own token: replaced, cleared, checked.
	churn.Go(func() {
		for range roundDone {
			c.SetToken(own)
			_, _ = c.Check(ctx, "orders", "read")
			c.ClearToken()
		}
	})
	// The channel: floods of random digests, malformed messages,
	// PurgeAlls, heartbeats and breaks.
	churn.Go(func() {
		msg := make([]byte, 34)
		for !done.Load() {
			_, _ = rand.Read(msg)
			msg[0], msg[1] = 1, 't'
			b.Deliver(msg)
			b.Deliver(msg[:7])
			b.Deliver([]byte{1, 'a'})
			b.Beat(time.Now())
			b.Lose(nil)
			b.Beat(time.Now())
			time.Sleep(5 * time.Millisecond) // let the cache fill between floods
		}
	})
	wg.Wait()
	done.Store(true)
	close(roundDone)
	churn.Wait()
	require.NoError(t, c.Close())
	t.Logf("rounds %d, stats %+v", rounds.Load(), c.Stats())
	require.Zero(t, breaks.Load(), "a cached GRANT of a purged, revoked token was served")
}
