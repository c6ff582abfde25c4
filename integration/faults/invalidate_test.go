package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
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

// redisRig is a Redis server behind a Toxiproxy proxy, and two replicas'
// clients that share cache purges through it (redisstore.Invalidator),
// before a reference server.
type redisRig struct {
	redis *redistest.Server
	tp    *toxiproxy.ApiServer
	proxy *toxiproxy.Proxy
	gw    *mockservertest.Server
	peps  []*pep.Client
}

func newRedisRig(t *testing.T) *redisRig {
	t.Helper()
	r := &redisRig{redis: redistest.Start(t), gw: mockservertest.Start(t, mockserver.WithFixture(fixture), es256Tokens)}
	r.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	r.proxy = toxiproxy.NewProxy(r.tp, "redis", "127.0.0.1:0", r.redis.Addr())
	require.NoError(t, r.tp.Collection.Add(r.proxy, true))
	t.Cleanup(func() { _ = r.tp.Collection.Clear() })
	for range 2 {
		rdb := redis.NewClient(&redis.Options{Addr: r.proxy.Listen, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		c := testkit.Must(hangguard.NewPep(r.gw.URL, realm, clientID, pep.WithHTTPClient(r.gw.Client()), pep.WithRetry(0, 0, 0),
			pep.WithInvalidator(redisstore.NewInvalidator(rdb, "faults"))))(t)
		t.Cleanup(func() { _ = c.Close() })
		r.peps = append(r.peps, c)
	}
	return r
}

// heal replaces the proxy by one without toxics on the same address (see
// rig.heal for why not RemoveToxic).
func (r *redisRig) heal(t *testing.T) {
	t.Helper()
	_ = r.tp.Collection.Remove(r.proxy.Name) // absent when the fault removed it
	proxy := toxiproxy.NewProxy(r.tp, r.proxy.Name, r.proxy.Listen, r.proxy.Upstream)
	require.NoError(t, r.tp.Collection.Add(proxy, true))
	r.proxy = proxy
}

// every reports whether cond holds for every replica.
func (r *redisRig) every(cond func(pep.Stats) bool) func() bool {
	return func() bool {
		for _, c := range r.peps {
			if !cond(c.Stats()) {
				return false
			}
		}
		return true
	}
}

// check checks orders/read for tok on c, and reports the status and
// whether the gateway was asked.
func check(t *testing.T, c *pep.Client, tok string) (pep.Status, bool) {
	t.Helper()
	before := c.Stats().GatewayRequests
	d, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "read")
	asked := c.Stats().GatewayRequests > before
	if err != nil {
		return pep.Deny, asked
	}
	return d.Status, asked
}

// TestInvalidationChannelFaults: between the replicas and Redis, the
// channel goes down, slow (past the trust window), reset, or Redis
// restarts. Meanwhile no replica serves a cached decision, and a token
// revoked and purged during the fault is granted by none afterwards; once
// the fault is gone every replica caches again, none restarted.
func TestInvalidationChannelFaults(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name  string
		apply func(t *testing.T, r *redisRig)
	}{
		{"down", func(t *testing.T, r *redisRig) { require.NoError(t, r.tp.Collection.Remove(r.proxy.Name)) }},
		{"slow", func(t *testing.T, r *redisRig) {
			testkit.Must(r.proxy.Toxics.AddToxicJson(strings.NewReader(`{"name": "slow", "type": "latency", "stream": "downstream", "toxicity": 1, "attributes": {"latency": 3000}}`)))(t)
		}},
		{"reset", func(t *testing.T, r *redisRig) {
			testkit.Must(r.proxy.Toxics.AddToxicJson(strings.NewReader(`{"name": "reset", "type": "reset_peer", "stream": "downstream", "toxicity": 1, "attributes": {"timeout": 0}}`)))(t)
		}},
		// Redis stops, and heal starts it again, empty, on its address.
		{"restarted", func(t *testing.T, r *redisRig) { r.redis.Stop() }},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			r := newRedisRig(t)
			require.Eventually(t, r.every(func(s pep.Stats) bool { return !s.CacheBypassed }), 10*time.Second, 5*time.Millisecond, "every replica trusts its cache")
			alice, other := r.gw.Token(realm, "alice", mockserver.TokenClient(clientID)), r.gw.Token(realm, "alice")
			for _, c := range r.peps {
				for _, tok := range []string{alice, other} {
					check(t, c, tok)
					_, asked := check(t, c, tok)
					require.False(t, asked)
				}
			}

			f.apply(t, r)
			require.Eventually(t, r.every(func(s pep.Stats) bool { return s.CacheBypassed }), 10*time.Second, 5*time.Millisecond, "every replica bypasses its cache")
			for i, c := range r.peps {
				s, asked := check(t, c, other)
				require.True(t, asked, "replica %d served a cached decision during the fault", i)
				require.Equal(t, pep.Grant, s)
			}
			// alice's token is revoked and purged on replica 0 during the
			// fault: the purge may be lost or late.
			r.gw.Revoke(t, realm, clientID, "orders-secret", alice)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			_ = r.peps[0].Purge(ctx, alice)
			cancel()

			if f.name == "restarted" {
				r.redis.Restart() // the proxy had no toxic: it stays
			} else {
				r.heal(t)
			}
			require.Eventually(t, r.every(func(s pep.Stats) bool { return !s.CacheBypassed }), 15*time.Second, 5*time.Millisecond, "every replica trusts its cache again")
			for i, c := range r.peps {
				s, _ := check(t, c, alice)
				require.NotEqual(t, pep.Grant, s, "replica %d granted the token revoked during the fault", i)
				check(t, c, other)
				_, asked := check(t, c, other)
				assert.False(t, asked, "replica %d does not cache again after the fault", i)
			}
		})
	}
}
