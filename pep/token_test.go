package pep_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// recorder collects events; safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *recorder) handle(ev events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder) kinds() []events.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []events.Kind
	for _, ev := range r.evs {
		ks = append(ks, ev.Kind)
	}
	return ks
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	calls := []struct {
		name string
		call func(ctx context.Context, c *pep.Client) (allowed bool, err error)
	}{
		{"Check", func(ctx context.Context, c *pep.Client) (bool, error) {
			d, err := c.Check(ctx, "orders", "read")
			return d.Allowed(), err
		}},
		{"CheckMany", func(ctx context.Context, c *pep.Client) (bool, error) {
			r, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
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
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			var rec recorder
			c := g.newClient(t, pep.WithEventHandler(rec.handle))
			c.SetToken("expired-token")

			for range 3 { // the token keeps being refused: one event only
				allowed, err := tt.call(t.Context(), c)
				assert.False(t, allowed)
				require.ErrorIs(t, err, pep.ErrUnauthorized)
				var re *pep.ResponseError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, http.StatusUnauthorized, re.StatusCode)
				assert.Equal(t, `Bearer error="invalid_token"`, re.Challenge)
				assert.NotContains(t, err.Error(), "expired-token")
			}
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
			expired := rec.evs[1]
			assert.Equal(t, "Bearer", expired.TokenType)
			require.ErrorIs(t, expired.Err, pep.ErrUnauthorized)
			assert.False(t, expired.Time.IsZero())
			assert.Equal(t, 3, g.count(), "a 401 is not retried")
		})
	}
}

func TestTokenExpiredHandlerMaySetToken(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	c := g.newClient(t)
	var expired int
	c.Subscribe(func(ev events.Event) {
		if ev.Kind == events.TokenExpired {
			expired++
			c.SetToken(bobToken) // must not deadlock
		}
	})
	c.SetToken(aliceToken)
	g.revoke(aliceToken)

	d, err := c.Check(t.Context(), "orders", "write")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	assert.False(t, d.Allowed())
	assert.Equal(t, 1, expired)

	d, err = c.Check(t.Context(), "orders", "write")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, "Bearer "+bobToken, g.last().Authorization, "the next call carries the new token")
}

func TestConcurrentRefusalsEmitOnce(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var rec recorder
	c := g.newClient(t, pep.WithEventHandler(rec.handle))
	c.SetToken("expired-token")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, err := c.Check(t.Context(), "orders", fmt.Sprint("scope-", i))
			assert.ErrorIs(t, err, pep.ErrUnauthorized)
		})
	}
	wg.Wait()
	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
}

func TestRefusedTokenEntriesArePurged(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	c := g.newClient(t)
	alice := pep.WithToken(t.Context(), aliceToken)
	bob := pep.WithToken(t.Context(), bobToken)
	for _, ctx := range []context.Context{alice, bob} {
		_, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
		require.NoError(t, err)
	}
	require.Equal(t, 4, c.Stats().CacheEntries)

	g.revoke(aliceToken)
	_, err := c.Check(alice, "invoices", "read") // not cached: reaches the gateway
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	assert.Equal(t, 2, c.Stats().CacheEntries, "alice's entries are gone, bob's stay")

	before := g.count()
	d, err := c.Check(alice, "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized, "alice's cached GRANT must not outlive the refusal")
	assert.False(t, d.Allowed())
	assert.Equal(t, before+1, g.count())

	d, err = c.Check(bob, "orders", "write")
	require.NoError(t, err)
	assert.True(t, d.Cached)
}

func TestPerCallTokenRefusalEmitsNothing(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var rec recorder
	c := g.newClient(t, pep.WithEventHandler(rec.handle))
	c.SetToken(aliceToken)
	_, err := c.Check(pep.WithToken(t.Context(), "someone-elses-expired-token"), "orders", "read")
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "the client's own token is fine")

	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	assert.True(t, d.Allowed())
}

func TestPerCallTokenOverridesClientToken(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	c := g.newClient(t)
	c.SetToken(aliceToken)
	d, err := c.Check(pep.WithToken(t.Context(), bobToken), "orders", "write")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, "Bearer "+bobToken, g.last().Authorization)
}

func TestNoToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		clientToken string
		ctx         func(context.Context) context.Context
	}{
		{"no token at all", "", func(ctx context.Context) context.Context { return ctx }},
		{"empty per-call token does not fall back", aliceToken, func(ctx context.Context) context.Context {
			return pep.WithToken(ctx, "")
		}},
		{"token with a newline", "", func(ctx context.Context) context.Context {
			return pep.WithToken(ctx, "abc\r\nX-Injected: 1")
		}},
		{"token with a space", "abc def", func(ctx context.Context) context.Context { return ctx }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			c := g.newClient(t)
			if tt.clientToken != "" {
				c.SetToken(tt.clientToken)
			}
			ctx := tt.ctx(t.Context())

			d, err := c.Check(ctx, "orders", "read")
			require.ErrorIs(t, err, pep.ErrNoToken)
			assert.False(t, d.Allowed())
			require.ErrorIs(t, d.Cause, pep.ErrNoToken)

			r, err := c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read"}}})
			require.ErrorIs(t, err, pep.ErrNoToken)
			assert.False(t, r.Allowed())

			perms, err := c.ListGranted(ctx, nil)
			require.ErrorIs(t, err, pep.ErrNoToken)
			assert.Empty(t, perms)

			_, err = c.Organizations(ctx)
			require.ErrorIs(t, err, pep.ErrNoToken)

			assert.Equal(t, 0, g.count(), "no request is sent without a usable token")
		})
	}
}

func TestTokenEvents(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var rec recorder
	c := g.newClient(t, pep.WithEventHandler(rec.handle))
	var second []events.Kind
	unsubscribe := c.Subscribe(func(ev events.Event) { second = append(second, ev.Kind) })

	c.ClearToken() // no token: nothing to clear, nothing emitted
	c.SetToken(aliceToken)
	c.SetToken(bobToken)
	unsubscribe()
	c.ClearToken()
	c.SetToken("") // the same as ClearToken: nothing left to clear

	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenSet, events.TokenCleared}, rec.kinds())
	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenSet}, second)
	for _, ev := range rec.evs {
		assert.Equal(t, "Bearer", ev.TokenType)
		assert.NoError(t, ev.Err)
	}
	_, err := c.Check(t.Context(), "orders", "read")
	require.ErrorIs(t, err, pep.ErrNoToken)
}

func TestSetTokenAndClearTokenPurgeTheOldTokensEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(c *pep.Client)
	}{
		{"SetToken", func(c *pep.Client) { c.SetToken(bobToken) }},
		{"SetToken with the same token", func(c *pep.Client) { c.SetToken(aliceToken) }},
		{"ClearToken", func(c *pep.Client) { c.ClearToken() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			c := g.newClient(t)
			_, err := c.Check(pep.WithToken(t.Context(), "carol-token"), "orders", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized) // carol is unknown: nothing cached
			g.grant("carol-token", "orders", "read")
			_, err = c.Check(pep.WithToken(t.Context(), "carol-token"), "orders", "read")
			require.NoError(t, err)
			c.SetToken(aliceToken)
			_, err = c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.Equal(t, 2, c.Stats().CacheEntries)

			tt.change(c)
			assert.Equal(t, 1, c.Stats().CacheEntries, "only the per-call token's entry is left")
			d, err := c.Check(pep.WithToken(t.Context(), aliceToken), "orders", "read")
			require.NoError(t, err)
			assert.False(t, d.Cached)
		})
	}
}

func TestPanickingHandlerDoesNotBreakTheClient(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var logs bytes.Buffer
	var after int
	c := g.newClient(t,
		pep.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		pep.WithEventHandler(func(events.Event) { panic("handler bug") }),
		pep.WithEventHandler(func(events.Event) { after++ }),
	)
	require.NotPanics(t, func() { c.SetToken(aliceToken) })
	g.revoke(aliceToken)
	require.NotPanics(t, func() {
		_, err := c.Check(t.Context(), "orders", "read")
		require.ErrorIs(t, err, pep.ErrUnauthorized)
	})
	assert.Equal(t, 2, after, "later handlers still run")
	assert.Contains(t, logs.String(), "handler bug")

	g.grant(aliceToken, "orders", "read")
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	assert.True(t, d.Allowed(), "the client keeps working")
}

// TestTokenNeverLeaks drives every path that produces an error or a log line
// while the gateway echoes the token back, and looks for it everywhere.
func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token-value.eyJzdWIiOiJzZWNyZXQifQ.c2ln"
	echo := func(status int) gwHook {
		return func(w http.ResponseWriter, r *http.Request, _ int) bool {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", token="`+secret+`"`)
			writeJSON(w, status, map[string]string{
				"error":   "Echo " + r.Header.Get("Authorization"),
				"message": "you sent " + r.Header.Get("Authorization"),
			})
			return true
		}
	}
	tests := []struct {
		name string
		hook gwHook
	}{
		{"401", echo(http.StatusUnauthorized)},
		{"403", echo(http.StatusForbidden)},
		{"400", echo(http.StatusBadRequest)},
		{"503 after retries", echo(http.StatusServiceUnavailable)},
		{"unknown status echoing the token", bodyHook(`{"status":"` + secret + `","permissions":[]}`)},
		{"unknown pair status echoing the token", bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"` + secret + `"}]}`)},
		{"unparseable body holding the token", bodyHook(secret)},
		{"granted", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			g.grant(secret, "orders", "read")
			g.setHook(tt.hook)
			var logs bytes.Buffer
			c := g.newClient(t, fastRetry,
				pep.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
				pep.WithEventHandler(func(ev events.Event) {
					if ev.Err != nil {
						assert.NotContains(t, ev.Err.Error(), secret)
					}
				}))
			c.SetToken(secret)

			var texts []string
			d, err := c.Check(t.Context(), "orders", "read")
			texts = append(texts, errText(err), errText(d.Cause), fmt.Sprintf("%+v %v", d, d))
			r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
			texts = append(texts, errText(err), fmt.Sprintf("%+v", r))
			perms, err := c.ListGranted(t.Context(), nil)
			texts = append(texts, errText(err), fmt.Sprintf("%+v", perms))
			_, err = c.Organizations(t.Context())
			texts = append(texts, errText(err), fmt.Sprintf("%+v", c.Stats()))

			require.NotEmpty(t, logs.String(), "the debug logger saw the calls")
			assert.NotContains(t, logs.String(), secret)
			for _, s := range texts {
				assert.NotContains(t, s, secret)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestLoggerSilentByDefault(t *testing.T) {
	t.Parallel()
	// The default logger discards; what we can check from outside is that
	// a client without WithLogger works on every logging path.
	g := newGateway(t)
	g.setHook(statusHook(http.StatusServiceUnavailable))
	c := g.newClient(t, fastRetry)
	c.SetToken(aliceToken)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	assert.True(t, strings.HasPrefix(d.Cause.Error(), "pep: gateway answered 503"), d.Cause.Error())
}

func TestAnswerArrivingAfterAPurgeIsNotCached(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	arrived := make(chan struct{})
	release := make(chan struct{})
	g.setHook(func(_ http.ResponseWriter, _ *http.Request, n int) bool {
		if n == 1 {
			close(arrived)
			select {
			case <-release:
			case <-g.closing:
			}
		}
		return false
	})
	c := g.newClient(t)
	c.SetToken(aliceToken)
	done := make(chan pep.Decision)
	go func() {
		d, err := c.Check(t.Context(), "orders", "read")
		assert.NoError(t, err)
		done <- d
	}()
	<-arrived
	c.SetToken(bobToken) // purges alice's entries while her request is out
	close(release)
	d := <-done
	requireGatewayDecision(t, d, pep.Grant) // the caller still gets its answer
	assert.Equal(t, 0, c.Stats().CacheEntries, "but it is not stored after the purge")

	d, err := c.Check(pep.WithToken(t.Context(), aliceToken), "orders", "read")
	require.NoError(t, err)
	assert.False(t, d.Cached)
	assert.Equal(t, 2, g.count())
}
