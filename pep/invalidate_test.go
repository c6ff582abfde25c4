package pep_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/invalidationtest"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// bus is the tests' in-process invalidation channel, which makes clients
// of the reference server.
type bus struct{ *invalidationtest.Bus }

func newBus() *bus { return &bus{invalidationtest.New()} }

// newLongBus returns a bus whose heartbeats are good for an hour.
func newLongBus() *bus { return &bus{invalidationtest.NewLong()} }

// client returns a client of g on b, once it has subscribed.
func (b *bus) client(t *testing.T, g *reference, opts ...pep.Option) *pep.Client {
	t.Helper()
	c := g.newClient(t, append([]pep.Option{pep.WithInvalidator(b)}, opts...)...)
	select {
	case <-b.Joined:
	case <-t.Context().Done():
		t.Fatal("the client did not subscribe")
	}
	return c
}

// checkServed checks orders/read for tok and reports the status and
// whether the gateway was asked.
func checkServed(t *testing.T, g *reference, c *pep.Client, tok string) (pep.Status, bool) {
	t.Helper()
	before := g.count()
	d, err := c.Check(pep.WithToken(t.Context(), tok), "orders", "read")
	if err != nil {
		return pep.Deny, g.count() > before
	}
	return d.Status, g.count() > before
}

// revoke revokes tok at the reference server's revocation endpoint (RFC
// 7009), as orders-api (mockservertest.Server.Revoke, for a server on
// gatewaytest).
func (g *reference) revoke(t *testing.T, tok string) {
	t.Helper()
	resp, err := g.Client().PostForm(g.URL+"/realms/acme/protocol/openid-connect/revoke",
		url.Values{"client_id": {testClient}, "client_secret": {"orders-secret"}, "token": {tok}})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestInvalidatorTrustsTheCacheOnlyWhileItsHeartbeatIsFresh: with an
// invalidator, a cached decision is served only within the trust window
// after a heartbeat was sent; before the first one, and once it is stale
// (a stalled channel, a frozen process), every Check asks the gateway. A
// heartbeat stamped later than now vouches from now only.
func TestInvalidatorTrustsTheCacheOnlyWhileItsHeartbeatIsFresh(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	clk := newManualClock()
	b := newBus()
	c := b.client(t, g, pep.WithClock(clk.Now))
	tok := g.token(t, "carol")

	for range 2 { // no heartbeat yet: nothing cached is served
		s, asked := checkServed(t, g, c, tok)
		require.Equal(t, pep.Grant, s)
		require.True(t, asked, "a cached decision was served before the first heartbeat")
	}
	assert.True(t, c.Stats().CacheBypassed)

	b.Beat(clk.Now())
	require.False(t, c.Stats().CacheBypassed)
	_, asked := checkServed(t, g, c, tok)
	require.True(t, asked, "the first heartbeat purges what was cached before it")
	_, asked = checkServed(t, g, c, tok)
	require.False(t, asked, "a fresh heartbeat: the cache is served")

	clk.Advance(invalidation.DefaultTrust - time.Nanosecond)
	_, asked = checkServed(t, g, c, tok)
	require.False(t, asked, "within the trust window")

	clk.Advance(time.Nanosecond) // the heartbeat is as old as the window: stale
	s, asked := checkServed(t, g, c, tok)
	require.Equal(t, pep.Grant, s)
	require.True(t, asked, "a stale heartbeat: the gateway is asked")
	assert.True(t, c.Stats().CacheBypassed)

	b.Beat(clk.Now().Add(-invalidation.DefaultTrust)) // an answer that waited as long as the window: still stale
	_, asked = checkServed(t, g, c, tok)
	require.True(t, asked, "a heartbeat counts from when it was sent, not when it arrived")

	b.Beat(clk.Now())
	_, asked = checkServed(t, g, c, tok)
	require.False(t, asked, "no break, so no purge: the cache is served again")
	st := c.Stats()
	assert.Equal(t, uint64(1), st.InvalidationRecoveries)
	assert.Zero(t, st.InvalidationGaps)

	b.Beat(clk.Now().Add(time.Hour)) // stamped later than now: trusted from now, for the window only
	clk.Advance(invalidation.DefaultTrust)
	_, asked = checkServed(t, g, c, tok)
	require.True(t, asked, "a heartbeat from the future kept the cache trusted")
}

// TestInvalidatorBreakPurgesEverythingCachedBeforeIt: when the channel
// breaks, purges may have been lost: nothing cached is served until a
// heartbeat sent after the break, which purges the whole cache first; a
// heartbeat sent before the break does not end it.
func TestInvalidatorBreakPurgesEverythingCachedBeforeIt(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	clk := newManualClock()
	b := newBus()
	c := b.client(t, g, pep.WithClock(clk.Now))
	carol, alice := g.token(t, "carol", mockserver.TokenClient(testClient)), g.token(t, "alice")
	b.Beat(clk.Now())
	for _, tok := range []string{carol, alice} {
		checkServed(t, g, c, tok)
		_, asked := checkServed(t, g, c, tok)
		require.False(t, asked)
	}
	before := clk.Now()
	clk.Advance(time.Millisecond)
	b.Lose(errors.New("connection reset"))

	// carol's GRANT is revoked while the channel is down; her purge is
	// lost with it.
	g.revoke(t, carol)
	s, asked := checkServed(t, g, c, carol)
	require.True(t, asked, "the channel is down: the gateway is asked")
	require.Equal(t, pep.Deny, s)
	_, asked = checkServed(t, g, c, alice)
	require.True(t, asked)

	b.Beat(before) // sent before the break: says nothing of what it lost
	_, asked = checkServed(t, g, c, alice)
	require.True(t, asked, "a heartbeat sent before the break ended it")

	clk.Advance(time.Millisecond)
	b.Beat(clk.Now())
	assert.Zero(t, c.Stats().CacheEntries, "the heartbeat after a break purges the whole cache")
	s, asked = checkServed(t, g, c, carol)
	require.True(t, asked)
	require.Equal(t, pep.Deny, s)
	st := c.Stats()
	assert.Equal(t, uint64(1), st.InvalidationGaps)
	assert.Equal(t, uint64(2), st.InvalidationRecoveries)
}

// TestPurgeReachesEveryReplica: a Purge on one replica, and a 401 seen by
// one, drop the token's cached decisions on every replica and no other
// token's; the messages carry a digest, never the token.
func TestPurgeReachesEveryReplica(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"Purge", "401"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			b := newLongBus()
			a, r := b.client(t, g), b.client(t, g)
			b.Beat(time.Now())
			carol, alice := g.token(t, "carol", mockserver.TokenClient(testClient)), g.token(t, "alice")
			for _, c := range []*pep.Client{a, r} {
				for _, tok := range []string{carol, alice} {
					checkServed(t, g, c, tok)
					_, asked := checkServed(t, g, c, tok)
					require.False(t, asked)
				}
			}
			g.revoke(t, carol)
			switch how {
			case "Purge":
				require.NoError(t, a.Purge(t.Context(), carol))
			case "401": // a's next request for carol meets the revocation
				_, err := a.Check(pep.WithToken(t.Context(), carol), "invoices", "read")
				require.ErrorIs(t, err, pep.ErrUnauthorized)
				// published on a goroutine of its own
				require.Eventually(t, func() bool { return r.Stats().Invalidations > 0 }, 10*time.Second, 2*time.Millisecond, "the purge reaches the other replica")
			}
			for _, c := range []*pep.Client{a, r} {
				s, asked := checkServed(t, g, c, carol)
				require.True(t, asked, "carol's cached GRANT outlived the purge")
				require.NotEqual(t, pep.Grant, s)
				_, asked = checkServed(t, g, c, alice)
				require.False(t, asked, "the purge of carol dropped alice's decisions")
				assert.Positive(t, c.Stats().Invalidations)
			}
			require.NotEmpty(t, b.Published())
			for _, m := range b.Published() {
				assert.NotContains(t, string(m), carol)
				assert.Len(t, m, 34, "a version, a kind and a SHA-256 digest")
			}
		})
	}
}

// TestMalformedInvalidationsAreIgnored: nothing on the channel but a
// well-formed purge removes anything, nothing on it grants, and garbage is
// counted.
func TestMalformedInvalidationsAreIgnored(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	b := newLongBus()
	c := b.client(t, g)
	b.Beat(time.Now())
	carol, dave := g.token(t, "carol"), g.token(t, "dave")
	for _, tok := range []string{carol, dave} {
		checkServed(t, g, c, tok)
	}
	bad := [][]byte{
		nil, {}, {1}, {1, 't'}, {2, 'a'}, {1, 'x'}, {1, 'a', 0},
		append([]byte{1, 't'}, make([]byte, 31)...), append([]byte{1, 't'}, make([]byte, 33)...),
		append([]byte{2, 't'}, make([]byte, 32)...), []byte(carol), []byte("GRANT"),
	}
	for _, m := range bad {
		b.Deliver(m)
	}
	st := c.Stats()
	assert.Equal(t, uint64(len(bad)), st.MalformedInvalidations)
	assert.Zero(t, st.Invalidations)
	for tok, want := range map[string]pep.Status{carol: pep.Grant, dave: pep.Deny} {
		s, asked := checkServed(t, g, c, tok)
		assert.False(t, asked, "a malformed message removed a cached decision")
		assert.Equal(t, want, s)
	}
	b.Deliver(append([]byte{1, 't'}, make([]byte, 32)...)) // well formed, no such token
	_, asked := checkServed(t, g, c, carol)
	assert.False(t, asked)
}

// FuzzInvalidationMessage: no message turns a DENY into a GRANT or panics.
func FuzzInvalidationMessage(f *testing.F) {
	f.Add([]byte{1, 'a'})
	f.Add(append([]byte{1, 't'}, make([]byte, 32)...))
	f.Add([]byte("GRANT"))
	g := startReference(f)
	b := newLongBus()
	c, err := hangguard.NewPep(g.URL, testRealm, testClient, pep.WithHTTPClient(g.Client()), pep.WithInvalidator(b))
	require.NoError(f, err)
	f.Cleanup(func() { _ = c.Close() })
	<-b.Joined
	b.Beat(time.Now()) // trusted throughout
	dave := g.token(f, "dave")
	f.Fuzz(func(t *testing.T, msg []byte) {
		b.Deliver(msg)
		d := checkedIn(t, c, pep.WithToken(t.Context(), dave), "orders", "read")
		require.Equal(t, pep.Deny, d.Status)
	})
}

// TestPurgeWithoutAChannel: Purge and PurgeAll work on a client without an
// invalidator; a failed publication still purges here and says so.
func TestPurgeWithoutAChannel(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	b := newLongBus()
	b.PublishErr = errors.New("channel closed")
	for name, c := range map[string]*pep.Client{"none": g.newClient(t), "failing": b.client(t, g)} {
		t.Run(name, func(t *testing.T) {
			if name == "failing" {
				b.Beat(time.Now())
			}
			tok := g.token(t, "carol")
			checkServed(t, g, c, tok)
			_, asked := checkServed(t, g, c, tok)
			require.False(t, asked)
			err := c.Purge(t.Context(), tok)
			_, asked = checkServed(t, g, c, tok)
			require.True(t, asked, "Purge left the token's decisions")
			err2 := c.PurgeAll(t.Context())
			assert.Zero(t, c.Stats().CacheEntries)
			if name == "none" {
				require.NoError(t, err)
				require.NoError(t, err2)
			} else {
				require.ErrorIs(t, err, b.PublishErr)
				require.ErrorIs(t, err2, b.PublishErr)
				assert.NotContains(t, err.Error(), tok)
				assert.Equal(t, uint64(2), c.Stats().InvalidationPublishFailures)
			}
			require.ErrorContains(t, c.Purge(t.Context(), ""), "empty")
		})
	}
}

// TestRefusedTokenIsPublishedOncePerQuietPeriod: a revoked token sent
// again and again publishes one purge, not one per request, until a
// second has passed.
func TestRefusedTokenIsPublishedOncePerQuietPeriod(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	clk := newManualClock()
	b := newBus()
	c := b.client(t, g, pep.WithClock(clk.Now))
	b.Beat(clk.Now())
	bob := g.token(t, "bob", mockserver.TokenClient(testClient))
	g.revoke(t, bob)
	published := func() int {
		return len(b.Published())
	}
	for range 20 {
		_, err := c.Check(pep.WithToken(t.Context(), bob), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	}
	// The publication runs on a goroutine of its own, started (or not)
	// before Check returned.
	// Each publication is two messages: one for this version, one for
	// earlier ones.
	require.Eventually(t, func() bool { return published() >= 2 }, 10*time.Second, 2*time.Millisecond, "the refusal is published")
	require.Equal(t, 2, published())
	clk.Advance(time.Second)
	_, err := c.Check(pep.WithToken(t.Context(), bob), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	require.Eventually(t, func() bool { return published() >= 4 }, 10*time.Second, 2*time.Millisecond, "the refusal is published again")
	require.Equal(t, 4, published())
}
