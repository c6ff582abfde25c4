package redisstore_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// slowHook adds d to every command of one replica's Redis client: a Redis
// in another zone, or a loaded one (a model of latency, not a wait on
// anything).
type slowHook struct{ d time.Duration }

func (h slowHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h slowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		time.Sleep(h.d)
		return next(ctx, cmd)
	}
}
func (h slowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// stopsServing reports whether c no longer serves tok's cached GRANT: a
// Check of tok on c is anything but a GRANT from its cache (the gateway,
// which revoked tok, refuses it).
func stopsServing(t *testing.T, c *pep.Client, tok string) func() bool {
	return func() bool {
		d, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "read")
		return err != nil || !d.Allowed() || !d.Cached
	}
}

// A refused token's purge reaches the other replicas even while anyone
// floods this replica with junk tokens the gateway refuses (no credential
// needed) and its Redis answers slowly (300 ms a command): the refusals
// that outgrow the queue are replaced by one purge of every replica's
// cache, never dropped. (At most 64 publications ran at once and a
// refusal beyond them was dropped: replica A served the revoked token's
// cached GRANT for its whole TTL, 30 s, its own channel healthy.)
func TestARefusedTokensPurgeSurvivesAJunkFlood(t *testing.T) {
	rs := redistest.Start(t)
	gw := startGateway(t)
	const channel = "test:refused:flood"
	a := replica(t, gw, rs.Client(), channel)
	slow := redis.NewClient(&redis.Options{Addr: rs.Addr(), PoolSize: 200})
	slow.AddHook(slowHook{300 * time.Millisecond})
	t.Cleanup(func() { _ = slow.Close() })
	b := replica(t, gw, slow, channel)
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))

	bob := revocable(gw, "bob")
	cache(t, bob, a)

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	var junk atomic.Int64
	for w := range 96 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				_, _ = b.Check(pep.WithToken(ctx, "junk"+strconv.Itoa(w)+"x"+strconv.Itoa(i)), "orders", "read")
				junk.Add(1)
			}
		})
	}
	// Far more refusals than B's Redis can take one by one meanwhile.
	waitFor(t, "B refuses the flood", 30*time.Second, func() bool { return junk.Load() >= 2000 })

	gw.Revoke(t, realm, app, secret, bob)
	_, err := b.Check(pep.WithToken(t.Context(), bob), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	waitFor(t, "A stops serving the revoked token's cached GRANT (it kept it for its TTL, 30 s)", 10*time.Second, stopsServing(t, a, bob))
	stop()
	wg.Wait()
	st := b.Stats()
	t.Logf("junk refusals: %d; B's publish failures: %d", junk.Load(), st.InvalidationPublishFailures)
}

// A refused token's purge whose publication failed (this replica's link
// to Redis hung for 2 s) is retried until delivered: replica A, whose own
// link never failed (no gap, so no purge of its whole cache), stops
// serving the revoked token's cached GRANT once B's link is back. (The
// failure was logged and counted, never retried: A served the GRANT for
// its TTL.)
func TestARefusedTokensPurgeIsRetriedAfterAnOutage(t *testing.T) {
	rs := redistest.Start(t)
	gw := startGateway(t)
	const channel = "test:refused:outage"
	a := replica(t, gw, rs.Client(), channel)
	px := redistest.StartProxy(t, redistest.Listen(t), rs.Addr(), nil)
	viaProxy := redis.NewClient(&redis.Options{Addr: px.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = viaProxy.Close() })
	b := replica(t, gw, viaProxy, channel)
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))

	bob := revocable(gw, "bob")
	cache(t, bob, a)
	gw.Revoke(t, realm, app, secret, bob)

	px.Set(redistest.Drop)
	failures := b.Stats().InvalidationPublishFailures
	_, err := b.Check(pep.WithToken(t.Context(), bob), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	waitFor(t, "B's publication fails", 10*time.Second, func() bool { return b.Stats().InvalidationPublishFailures > failures })
	require.False(t, stopsServing(t, a, bob)(), "A heard of the refusal during B's outage")
	px.Cut()
	px.Set(redistest.Pass)

	waitFor(t, "A stops serving the revoked token's cached GRANT (it kept it for its TTL, 30 s)", 10*time.Second, stopsServing(t, a, bob))
	require.Zero(t, a.Stats().InvalidationGaps, "A's own channel broke: its purge of the whole cache proves nothing")
}
