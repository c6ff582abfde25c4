package pep_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// credentialCalls are the calls that send the client's token to the
// gateway, each of which the gateway can refuse; each reports whether it
// allowed anything.
var credentialCalls = []struct {
	name string
	call func(ctx context.Context, c *pep.Client) (allowed bool, err error)
}{
	{"Check", func(ctx context.Context, c *pep.Client) (bool, error) {
		d, err := c.Check(ctx, "orders", "write", pep.NoCache())
		return d.Allowed(), err
	}},
	{"CheckMany", func(ctx context.Context, c *pep.Client) (bool, error) {
		r, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"write", "delete"}}}, pep.NoCache())
		for _, d := range r.Decisions {
			if d.Status != pep.Deny || !errors.Is(d.Cause, pep.ErrUnauthorized) {
				return true, err
			}
		}
		return r.Allowed(), err
	}},
	{"ListGranted", func(ctx context.Context, c *pep.Client) (bool, error) {
		perms, err := c.ListGranted(ctx, nil)
		return len(perms) > 0, err
	}},
	{"Organizations", func(ctx context.Context, c *pep.Client) (bool, error) {
		_, err := c.Organizations(ctx)
		return false, err
	}},
	{"Verify", func(ctx context.Context, c *pep.Client) (bool, error) { return false, c.Verify(ctx) }},
}

// TestEveryRefusalPurgesAndExpiresTheTokenOnce: whichever call the gateway
// refuses the client's token on (a 401), Verify included, the call fails
// with ErrUnauthorized and a *ResponseError carrying the server's
// challenge as it came, nothing of the token, and no retry; the token's
// cached decisions are gone at once, here and on every replica; and
// tokenExpired is emitted once however many calls are refused.
func TestEveryRefusalPurgesAndExpiresTheTokenOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range credentialCalls {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			clk := newManualClock()
			b := newBus()
			b.Trust = time.Hour
			var rec recorder
			c := b.client(t, g, pep.WithClock(clk.Now), pep.WithEventHandler(rec.handle))
			b.Beat(clk.Now())
			alice := g.token(t, "alice", mockserver.TokenClient(testClient))
			c.SetToken(alice)
			d := checked(t, c, "orders", "read")
			require.True(t, d.Allowed())
			d = checked(t, c, "orders", "read")
			require.True(t, d.Cached, "the GRANT is cached")

			g.revoke(t, alice)
			sent := len(g.posts())
			for range 3 {
				allowed, err := tt.call(t.Context(), c)
				assert.False(t, allowed)
				require.ErrorIs(t, err, pep.ErrUnauthorized)
				var re *pep.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, http.StatusUnauthorized, re.StatusCode)
				posts := g.posts()
				assert.Equal(t, posts[len(posts)-1].Answer.Get("WWW-Authenticate"), re.Challenge, "the server's challenge, as it came")
				assert.True(t, strings.HasPrefix(re.Challenge, "Bearer "), re.Challenge)
				assert.Contains(t, re.Challenge, `error="invalid_token"`)
				assert.NotContains(t, err.Error(), alice)
			}
			assert.Len(t, g.posts(), sent+3, "a 401 is not retried")
			assert.Zero(t, c.Stats().CacheEntries, "the refused token's decisions are purged")
			d, err := c.Check(t.Context(), "orders", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized, "the cached GRANT outlived the refusal")
			assert.False(t, d.Allowed())
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
			expired := rec.evs[1]
			assert.Equal(t, "Bearer", expired.TokenType)
			require.ErrorIs(t, expired.Err, pep.ErrUnauthorized)
			assert.False(t, expired.Time.IsZero())
			// Published on a goroutine of its own, started before the call
			// returned.
			require.Eventually(t, func() bool {
				return len(b.Published()) == 2 // a message for this version, one for earlier ones
			}, 10*time.Second, 2*time.Millisecond, "the refusal is published to the other replicas")
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
