package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// The reference server's fixture: in realm acme, bob may read orders
// (group support, role viewer), erin may not.
const (
	fixture = "../examples/fixtures/acme.json"
	realm   = "acme"
	app     = "orders-api"
	secret  = "orders-secret"
)

// startGateway starts the reference server with the fixture. It signs
// access tokens ES256, with the P-256 key every realm has from the start,
// rather than RS256 (the default) with a 2048-bit RSA key made on the
// realm's first token, 70 to 110 ms of CPU under -race per server: no test
// here is about the token's algorithm. Each server still makes keys of its
// own (shared keys would make one accept another's tokens).
func startGateway(t testing.TB) *mockservertest.Server {
	t.Helper()
	return mockservertest.Start(t, mockserver.WithFixtureFile(fixture), mockserver.WithAccessTokenAlgorithm("ES256"))
}

// revocable mints a token of user that orders-api may revoke (RFC 7009).
func revocable(gw *mockservertest.Server, user string) string {
	return gw.Token(realm, user, mockserver.TokenClient(app))
}

// replica is one replica's client, on its own Redis connection, with
// opts after its own (the later wins).
func replica(t *testing.T, gw *mockservertest.Server, rdb redis.UniversalClient, channel string, opts ...pep.Option) *pep.Client {
	t.Helper()
	c := testkit.Must(hangguard.NewPep(gw.URL, realm, app, append([]pep.Option{pep.WithHTTPClient(gw.Client()), pep.WithRetry(0, 0, 0),
		pep.WithInvalidator(redisstore.NewInvalidator(rdb, channel))}, opts...)...))(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, limit)
		}
	}
}

// trusted reports whether every client serves its cache.
func trusted(cs ...*pep.Client) func() bool {
	return func() bool {
		for _, c := range cs {
			if c.Stats().CacheBypassed {
				return false
			}
		}
		return true
	}
}

// served checks orders/read for tok on c and reports the status and
// whether the gateway was asked.
func served(t *testing.T, c *pep.Client, tok string) (pep.Status, bool) {
	t.Helper()
	before := c.Stats().GatewayRequests
	d, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "read")
	asked := c.Stats().GatewayRequests > before
	if err != nil {
		return pep.Deny, asked
	}
	return d.Status, asked
}

// latestCachedGrant watches replica b after another replica's Purge of
// tok returned at purged (tok already revoked at the gateway): it Checks
// orders/read for tok on b every 10 ms until b asks the gateway about tok
// and is refused, or until window has passed since purged, and returns the latest time after
// purged at which b served tok's GRANT from its cache, or 0 if it never
// did. The time is read before the Check that served the GRANT began, so
// a loaded machine that delays the Check's return never makes a hit look
// later than it was. Once the gateway has refused tok (401) the watch can
// end: a refusal drops b's cached decisions of tok (pep's
// TestRefusedTokenEntriesArePurged), and the gateway answers nothing but
// that refusal for the revoked tok, so b has no GRANT of tok to serve any
// more.
func latestCachedGrant(t *testing.T, b *pep.Client, tok string, purged time.Time, window time.Duration) time.Duration {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var latest time.Duration
	for {
		begun := time.Since(purged)
		if begun >= window {
			return latest
		}
		before := b.Stats().GatewayRequests
		d, err := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
		asked := b.Stats().GatewayRequests != before
		if asked && errors.Is(err, pep.ErrUnauthorized) {
			return latest
		}
		if err == nil && d.Allowed() && d.Cached && !asked {
			latest = begun
		}
		<-tick.C
	}
}

// cache has each client cache tok's decision and checks it is served
// from the cache. A client bypasses its cache while its channel's
// heartbeat is late, which a loaded machine (or a failover just done) may
// make it for a moment between the two checks: the pair is tried again
// once the client trusts its cache, at most five times.
func cache(t *testing.T, tok string, cs ...*pep.Client) {
	t.Helper()
	for _, c := range cs {
		for attempt := 1; ; attempt++ {
			waitFor(t, "the replica trusts its cache", 10*time.Second, trusted(c))
			served(t, c, tok)
			if _, asked := served(t, c, tok); !asked {
				break
			}
			require.Less(t, attempt, 5, "the decision was not cached: %+v", c.Stats())
		}
	}
}

// threeReplicas starts three replicas on channel of rs, waits until
// each trusts its cache, and has each cache a decision of bob's
// (revocable) token and of erin's, which it returns.
func threeReplicas(t *testing.T, gw *mockservertest.Server, rs *redistest.Server, channel string) (cs []*pep.Client, bob, erin string) {
	t.Helper()
	for range 3 {
		cs = append(cs, replica(t, gw, rs.Client(), channel))
	}
	waitFor(t, "every replica trusts its cache", 10*time.Second, trusted(cs...))
	bob, erin = revocable(gw, "bob"), gw.Token(realm, "erin")
	cache(t, bob, cs...)
	cache(t, erin, cs...)
	return cs, bob, erin
}

// TestInvalidatorPurgesEveryReplica: three replicas on one Redis channel;
// a token revoked at the server and purged on one replica (Purge), or
// refused there (a 401), is no longer granted by any replica once each
// has received the purge, and another token's decisions stay cached.
func TestInvalidatorPurgesEveryReplica(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"Purge", "401"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t)
			cs, bob, erin := threeReplicas(t, gw, redistest.Start(t), "test:"+how)

			gw.Revoke(t, realm, app, secret, bob)
			switch how {
			case "Purge":
				require.NoError(t, cs[0].Purge(t.Context(), bob))
			case "401":
				_, err := cs[0].Check(pep.WithToken(t.Context(), bob), "invoices", "read")
				require.ErrorIs(t, err, pep.ErrUnauthorized)
			}
			for i, c := range cs {
				waitFor(t, "the purge reaches every replica", 10*time.Second, func() bool { return c.Stats().Invalidations > 0 })
				s, asked := served(t, c, bob)
				require.True(t, asked, "replica %d served bob's purged decision", i)
				require.Equal(t, pep.Deny, s)
				_, asked = served(t, c, erin)
				require.False(t, asked, "replica %d lost erin's decision to bob's purge", i)
			}
		})
	}
}

// TestInvalidatorThroughARedisRestart: while Redis is down no replica
// serves a cached decision (a purge published then is lost); once it is
// back, every replica purges what it cached before and caches again, and
// no replica was restarted.
func TestInvalidatorThroughARedisRestart(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	if !rs.Real() {
		t.Log("miniredis: its restart keeps connections open, so only the heartbeat's staleness shows the gap")
	}
	gw := startGateway(t)
	cs, bob, erin := threeReplicas(t, gw, rs, "test:restart")

	rs.Stop()
	waitFor(t, "every replica bypasses its cache", 10*time.Second, func() bool {
		for _, c := range cs {
			if !c.Stats().CacheBypassed {
				return false
			}
		}
		return true
	})
	gw.Revoke(t, realm, app, secret, bob)
	err := cs[0].Purge(t.Context(), bob)
	require.Error(t, err, "Purge says the other replicas may not have heard")
	assert.NotContains(t, err.Error(), bob)
	for i, c := range cs {
		s, asked := served(t, c, bob)
		require.True(t, asked, "replica %d served a cached decision while Redis was down", i)
		require.Equal(t, pep.Deny, s)
		_, asked = served(t, c, erin)
		require.True(t, asked, "replica %d served a cached decision while Redis was down", i)
	}
	assert.Positive(t, cs[1].Stats().InvalidationGaps)

	rs.Restart()
	waitFor(t, "every replica trusts its cache again", 15*time.Second, trusted(cs...))
	bob2 := revocable(gw, "bob")
	for i, c := range cs {
		assert.GreaterOrEqual(t, c.Stats().InvalidationRecoveries, uint64(2), "replica %d", i)
		s, _ := served(t, c, bob)
		require.Equal(t, pep.Deny, s, "replica %d granted the token revoked while Redis was down", i)
	}
	cache(t, bob2, cs...) // caching resumed
	require.NoError(t, cs[2].Purge(t.Context(), bob2))
	for i, c := range cs {
		// bob2's is the only decision cached (bob's 401s purged bob's).
		waitFor(t, "the purge after the restart reaches every replica", 10*time.Second, func() bool { return c.Stats().CacheEntries == 0 })
		_, asked := served(t, c, bob2)
		require.True(t, asked, "replica %d served bob2's purged decision", i)
	}
}

// TestInvalidatorWithoutAClient: an Invalidator made with a nil client
// fails every Publish and Subscribe with an error that says what to fix,
// and a client on it never serves its cache.
func TestInvalidatorWithoutAClient(t *testing.T) {
	t.Parallel()
	inv := redisstore.NewInvalidator(nil, "")
	err := inv.Publish(t.Context(), []byte{1, 'a'})
	require.ErrorContains(t, err, "NewInvalidator")
	gw := startGateway(t)
	c := testkit.Must(hangguard.NewPep(gw.URL, realm, app, pep.WithHTTPClient(gw.Client()), pep.WithInvalidator(inv)))(t)
	t.Cleanup(func() { _ = c.Close() })
	bob := gw.Token(realm, "bob")
	for range 2 {
		_, asked := served(t, c, bob)
		require.True(t, asked)
	}
	require.Error(t, c.PurgeAll(t.Context()))
	waitFor(t, "the failed subscription is counted", 10*time.Second, func() bool { return c.Stats().InvalidationGaps > 0 })
}

// TestInvalidatorRefusesTopologiesItCannotVouchFor: a redis.Ring (whose
// channels may sit on servers that do not order each other's messages),
// and a Cluster channel whose heartbeat channel could not share its slot,
// make every Publish and Subscribe fail with an error that says what to
// use.
func TestInvalidatorRefusesTopologiesItCannotVouchFor(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": rs.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{rs.Addr()}})
	t.Cleanup(func() { _ = cluster.Close() })
	for _, tc := range []struct {
		name    string
		client  redis.UniversalClient
		channel string
		says    string
	}{
		{"Ring", ring, "", "use a redis.Client"},
		{"Cluster channel with a '}' and no hash tag", cluster, "orders}invalidations", "hash tag"},
		{"Cluster channel with an empty hash tag", cluster, "orders{}invalidations", "hash tag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := redisstore.NewInvalidator(tc.client, tc.channel)
			require.ErrorContains(t, inv.Publish(t.Context(), []byte{1, 'a'}), tc.says)
			require.ErrorContains(t, inv.Subscribe(t.Context(), &sessionLog{}), tc.says)
		})
	}
}
