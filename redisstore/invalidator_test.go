package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
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

// holdWrite is a RoundTripper that holds the answer to a request about
// orders/write (a slow link) until release is closed, once arrived says
// the answer came.
type holdWrite struct {
	next             http.RoundTripper
	arrived, release chan struct{}
	once             sync.Once
}

func (h *holdWrite) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := h.next.RoundTrip(r)
	if bytes.Contains(body, []byte(`"write"`)) {
		h.once.Do(func() { close(h.arrived) })
		<-h.release
	}
	return resp, err
}

// TestAnAnswersGrantDoesNotOutliveAStalledChannel (a-client15 F1, with
// Redis):
// replicas A and B share a Redis invalidation channel; A's link to Redis
// goes through a proxy. A's CheckMany of bob's orders/read and
// orders/write (two chunks) reads orders/read's GRANT; its orders/write
// answer is slow. Meanwhile A's link to Redis stalls (A stops trusting its
// cache two seconds later: CacheBypassed), bob's token is revoked at the
// gateway and purged on B, whose purge A never hears. When orders/write's
// answer comes, orders/read's GRANT read before all that must not leave
// A's CheckMany: neither the cache A no longer trusts nor the gateway,
// which now refuses bob, vouches for it. A checks it again (core.Confirm:
// the channel trusted at its send is trusted no longer) and asks the
// gateway again, which refuses bob: the call fails closed whole.
func TestAnAnswersGrantDoesNotOutliveAStalledChannel(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	rs := redistest.Start(t)
	proxy := redistest.StartProxy(t, redistest.Listen(t), rs.Addr(), nil)
	rdbA := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	t.Cleanup(func() { _ = rdbA.Close() })
	hold := &holdWrite{next: gw.Client().Transport, arrived: make(chan struct{}), release: make(chan struct{})}
	a := replica(t, gw, rdbA, "test:trustwait", pep.WithHTTPClient(&http.Client{Transport: hold}),
		pep.WithBatchSize(1), pep.WithTimeout(time.Minute))
	b := replica(t, gw, rs.Client(), "test:trustwait")
	waitFor(t, "both replicas trust their caches", 10*time.Second, trusted(a, b))
	bob := revocable(gw, "bob")

	type out struct {
		r   pep.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := a.CheckMany(pep.WithToken(t.Context(), bob), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
		done <- out{r, err}
	}()
	<-hold.arrived
	proxy.Set(redistest.Drop) // A's channel stalls, its connections kept open
	waitFor(t, "A stops trusting its cache", 10*time.Second, func() bool { return a.Stats().CacheBypassed })
	gw.Revoke(t, realm, app, secret, bob)
	require.NoError(t, b.Purge(t.Context(), bob))
	close(hold.release)
	o := <-done
	require.ErrorIs(t, o.err, pep.ErrUnauthorized, "orders/read asked again: the gateway refuses bob")
	require.Len(t, o.r.Decisions, 2)
	d := o.r.Decisions[0]
	require.Equal(t, "read", d.Scope)
	assert.True(t, a.Stats().CacheBypassed)
	assert.NotEqual(t, pep.Grant, d.Status,
		"orders/read's GRANT, read before A's channel stalled and bob was revoked and purged on B, left A's CheckMany")
	_, err := a.Check(pep.WithToken(t.Context(), bob), "orders", "read")
	assert.ErrorIs(t, err, pep.ErrUnauthorized, "a Check on A now: the gateway refuses bob")
}
