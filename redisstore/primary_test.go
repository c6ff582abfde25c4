package redisstore_test

// Publications prove they reached a primary (a-rep9 F1). A failover that
// leaves the old primary running as a replica (Redis's own FAILOVER, a
// manual REPLICAOF, a DNS name or proxy switched to the promoted server
// without killing client connections) left a replica's pooled connections
// on the demoted server. Redis accepts PUBLISH on a replica and delivers
// it to that server's own subscribers only: the replica's own heartbeats
// came back, it trusted its cache, and its Purge returned nil, while a
// replica subscribed on the promoted server never heard the purge and
// served the revoked token's cached GRANT for the cache's TTL. Promise:
// every publication (purge, purge-all, heartbeat) is taken by a primary
// in the same step on the same connection, or fails; a refused
// connection is dropped, so the publication is retried on the primary
// when the client can reach it.

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// The failovers that leave the old primary (s1) running as a replica of
// the promoted one (s2), its clients connected.
const (
	byReplicaOf = "REPLICAOF"                       // promoted and demoted by hand
	byWritable  = "REPLICAOF, replica-read-only no" // the same, the demoted server taking writes
	byFailover  = "FAILOVER"                        // Redis's own coordinated failover (6.2+)
)

var failovers = []string{byReplicaOf, byWritable, byFailover}

// replicated starts s1 and s2 with s2 replicating s1; it skips t on
// miniredis, which has no replication.
func replicated(t *testing.T) (s1, s2 *redistest.Server) {
	t.Helper()
	s1, s2 = redistest.Start(t), redistest.Start(t)
	if !s1.Real() {
		t.Skip("miniredis has no replication")
	}
	host1, port1, _ := net.SplitHostPort(s1.Addr())
	require.NoError(t, s2.Client().Do(t.Context(), "REPLICAOF", host1, port1).Err())
	waitFor(t, "s2 replicates s1", 15*time.Second, linkUp(t, s2))
	return s1, s2
}

// linkUp reports whether s replicates its primary.
func linkUp(t *testing.T, s *redistest.Server) func() bool {
	return func() bool {
		info, err := s.Client().Info(t.Context(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}
}

// failOver promotes s2 and leaves s1 running as its replica, the way how
// says, and returns once s1 replicates s2.
func failOver(t *testing.T, how string, s1, s2 *redistest.Server) {
	t.Helper()
	ctx := t.Context()
	switch how {
	case byFailover:
		require.NoError(t, s1.Client().Do(ctx, "FAILOVER").Err())
	case byReplicaOf, byWritable:
		if how == byWritable {
			require.NoError(t, s1.Client().ConfigSet(ctx, "replica-read-only", "no").Err())
		}
		require.NoError(t, s2.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err())
		host2, port2, _ := net.SplitHostPort(s2.Addr())
		require.NoError(t, s1.Client().Do(ctx, "REPLICAOF", host2, port2).Err())
	}
	waitFor(t, "s1 replicates s2", 15*time.Second, linkUp(t, s1))
}

// TestPublicationsProveTheyReachedAPrimary: replica A's Redis name moves
// to the promoted server (a switched dialer), its pool still holding
// connections to the demoted one; replica B starts after the failover and
// subscribes on the promoted server. A's Purge of a revoked token reaches
// B: B serves no cached GRANT of it later than the propagation bound.
// Before the fix A published on the demoted server, Purge returned nil
// and B served the GRANT for the whole watch.
func TestPublicationsProveTheyReachedAPrimary(t *testing.T) {
	t.Parallel()
	for _, how := range failovers {
		t.Run(how, func(t *testing.T) {
			s1, s2 := replicated(t)
			var primary redistest.Name
			primary.Point(s1.Addr())
			client := func() *redis.Client { return primary.Client(t, redis.Options{}) }
			gw := startGateway(t)
			const channel = "primary:moved"
			a := replica(t, gw, client(), channel)
			waitFor(t, "A trusts its cache", 10*time.Second, trusted(a))

			failOver(t, how, s1, s2)
			primary.Point(s2.Addr())
			b := replica(t, gw, client(), channel)
			waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))

			tok := revocable(gw, "bob")
			cache(t, tok, a, b)
			gw.Revoke(t, realm, app, secret, tok)
			require.NoError(t, a.Purge(t.Context(), tok), "the purge is published on the promoted server, which A's client reaches")
			late := latestCachedGrant(t, b, tok, time.Now(), 3*invalidation.DefaultTrust)
			require.LessOrEqual(t, late, invalidation.DefaultTrust,
				"B served the purged token's cached GRANT %v after A's Purge returned nil; A: %+v B: %+v", late, a.Stats(), b.Stats())
		})
	}
}

// TestAPurgeOnADemotedPrimaryFails: an Invalidator whose client reaches
// only the demoted server (its address) fails every publication there,
// with an error that says the server is a replica, and nothing is
// delivered to the demoted server's subscribers; its subscription's
// heartbeats are refused too, so the session is reported lost and the
// cache is not trusted. Before the fix Publish returned nil, the message
// reached the demoted server's subscribers only, and the heartbeats kept
// coming back.
func TestAPurgeOnADemotedPrimaryFails(t *testing.T) {
	t.Parallel()
	for _, how := range failovers {
		t.Run(how, func(t *testing.T) {
			s1, s2 := replicated(t)
			ctx := t.Context()
			old := redis.NewClient(&redis.Options{Addr: s1.Addr()})
			t.Cleanup(func() { _ = old.Close() })
			const channel = "primary:demoted"
			inv := redisstore.NewInvalidator(old, channel)
			require.NoError(t, inv.Publish(ctx, []byte("while s1 is the primary")))

			rec := &sessionLog{}
			sctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- inv.Subscribe(sctx, rec) }()
			defer func() { cancel(); require.ErrorIs(t, <-done, context.Canceled) }()
			waitFor(t, "the session's heartbeat comes back", 10*time.Second, func() bool {
				_, beats, _ := rec.read()
				return beats > 0
			})
			// A subscriber on the demoted server sees what is published
			// there, and what its primary passes on.
			watch := s1.Client().Subscribe(ctx, channel)
			t.Cleanup(func() { _ = watch.Close() })
			_, err := watch.ReceiveTimeout(ctx, 10*time.Second)
			require.NoError(t, err, "the watch's subscription")

			failOver(t, how, s1, s2)
			demoted := time.Now()
			err = inv.Publish(ctx, []byte("on the demoted server"))
			require.Error(t, err, "a publication on a replica was reported taken")
			require.ErrorContains(t, err, "replica, not the primary")

			// The promoted server's message reaches the demoted server's
			// subscribers through replication, after anything published
			// on the demoted server itself: it must come first.
			require.NoError(t, s2.Client().Publish(ctx, channel, "from the primary").Err())
			m, err := watch.ReceiveMessage(ctx)
			require.NoError(t, err)
			require.Equal(t, "from the primary", m.Payload, "the refused publication reached the demoted server's subscribers")

			// The session's heartbeats, published on the demoted server,
			// are refused: it is reported lost (a FAILOVER, which pauses
			// the primary's writers, may first make it wait for 2 s), and
			// no heartbeat sent after the demotion comes back.
			waitFor(t, "the session is refused as on a replica", 10*time.Second, func() bool {
				_, _, lost := rec.read()
				return slices.ContainsFunc(lost, func(err error) bool { return strings.Contains(err.Error(), "replica, not") })
			})
			last, _, lost := rec.read()
			require.True(t, last.Before(demoted), "a heartbeat sent on the demoted server came back (sent %v after the demotion); lost: %v", last.Sub(demoted), lost)
		})
	}
}

// sessionLog is a Receiver that keeps the send time of the latest
// heartbeat, their count, and every Lost error.
type sessionLog struct {
	mu    sync.Mutex
	last  time.Time
	beats int
	lost  []error
}

func (l *sessionLog) Message([]byte) {}
func (l *sessionLog) Lost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = append(l.lost, err)
}
func (l *sessionLog) Heartbeat(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beats++
	if sent.After(l.last) {
		l.last = sent
	}
}

func (l *sessionLog) read() (last time.Time, beats int, lost []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.beats, slices.Clone(l.lost)
}

// BenchmarkPublish measures one Invalidator publication (a purge; a
// heartbeat is the same call) against the real redis-server on loopback:
// the script that proves the server is the primary and publishes.
func BenchmarkPublish(b *testing.B) {
	rs := redistest.Start(b)
	inv := redisstore.NewInvalidator(rs.Client(), "bench:publish")
	msg := append([]byte{1, 't'}, make([]byte, 32)...)
	ctx := b.Context()
	for b.Loop() {
		if err := inv.Publish(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}
