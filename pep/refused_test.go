package pep_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// credentialCalls are the calls that send the client's token to the
// gateway, each of which the gateway can refuse.
var credentialCalls = []struct {
	name string
	call func(ctx context.Context, c *pep.Client) error
}{
	{"Check", func(ctx context.Context, c *pep.Client) error {
		_, err := c.Check(ctx, "orders", "write", pep.NoCache())
		return err
	}},
	{"CheckMany", func(ctx context.Context, c *pep.Client) error {
		_, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"write", "delete"}}}, pep.NoCache())
		return err
	}},
	{"ListGranted", func(ctx context.Context, c *pep.Client) error {
		_, err := c.ListGranted(ctx, nil)
		return err
	}},
	{"Organizations", func(ctx context.Context, c *pep.Client) error {
		_, err := c.Organizations(ctx)
		return err
	}},
	{"Verify", func(ctx context.Context, c *pep.Client) error { return c.Verify(ctx) }},
}

// TestEveryRefusalPurgesAndExpiresTheTokenOnce: whichever call the gateway
// refuses the client's token on (a 401), Verify included, the token's
// cached decisions are gone at once, here and on every replica, and
// tokenExpired is emitted once however many calls are refused.
func TestEveryRefusalPurgesAndExpiresTheTokenOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range credentialCalls {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			clk := newManualClock()
			b := newBus()
			b.trust = time.Hour
			var rec recorder
			c := b.client(t, g, pep.WithClock(clk.Now), pep.WithEventHandler(rec.handle))
			b.beat(clk.Now())
			alice := g.token(t, "alice", mockserver.TokenClient(testClient))
			c.SetToken(alice)
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed())
			d, err = c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Cached, "the GRANT is cached")

			g.revoke(t, alice)
			for range 3 {
				require.ErrorIs(t, tt.call(t.Context(), c), pep.ErrUnauthorized)
			}
			assert.Zero(t, c.Stats().CacheEntries, "the refused token's decisions are purged")
			d, err = c.Check(t.Context(), "orders", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized, "the cached GRANT outlived the refusal")
			assert.False(t, d.Allowed())
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
			// Published on a goroutine of its own, started before the call
			// returned.
			eventually(t, "the refusal is published to the other replicas", func() bool {
				b.mu.Lock()
				defer b.mu.Unlock()
				return len(b.published) == 2 // a message for this version, one for earlier ones
			})
		})
	}
}

// TestRefreshHandlerCallingVerifyEnds: the README's advice for a
// tokenExpired loop is to stop refreshing and call Verify. A handler that
// calls Verify on tokenExpired (after a refresh whose new token is refused
// too, and then without one) is told each time, and each token expires
// once: Verify's own refusal of an expired token emits nothing more, so
// the handler is not run again for ever.
func TestRefreshHandlerCallingVerifyEnds(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	var rec recorder
	c := g.newClient(t, pep.WithEventHandler(rec.handle))
	alice, bob := g.token(t, "alice", mockserver.TokenClient(testClient)), g.token(t, "bob", mockserver.TokenClient(testClient))
	g.revoke(t, alice)
	g.revoke(t, bob)
	var verified []error
	refreshed := false
	c.Subscribe(func(e events.Event) {
		if e.Kind != events.TokenExpired {
			return
		}
		if !refreshed { // the refresh: a token refused at once
			refreshed = true
			c.SetToken(bob)
		}
		verified = append(verified, c.Verify(context.Background()))
	})
	c.SetToken(alice)

	_, err := c.Check(t.Context(), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired, events.TokenSet, events.TokenExpired}, rec.kinds(),
		"one tokenExpired per refused token")
	require.Len(t, verified, 2)
	for _, err := range verified {
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	}
}
