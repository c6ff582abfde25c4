package pep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// breakerOptions make a client with a 3-failure, 5 s breaker on a manual
// clock, without retries so that one call is one gateway request, and
// without a cache so that every call is one.
func breakerOptions(clk *manualClock) []pep.Option {
	return []pep.Option{noRetry, pep.WithBreaker(3, 5*time.Second), pep.WithClock(clk.Now), pep.WithCache(0, 0, 0)}
}

// breakerClient returns an orders-api client of alice with breakerOptions.
func breakerClient(t *testing.T, g *reference, clk *manualClock) *pep.Client {
	t.Helper()
	c := g.newClient(t, breakerOptions(clk)...)
	c.SetToken(g.token(t, "alice"))
	return c
}

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := startReference(t)
	g.configure(t, everyDecisionFails)
	c := breakerClient(t, g, clk)

	for i := range 3 {
		assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker, "before failure %d", i+1)
		d, err := c.Check(t.Context(), "orders", "read")
		require.NoError(t, err)
		assert.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	}
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker)

	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	assert.Equal(t, 3, g.count(), "an open breaker does not call the gateway")

	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	require.NoError(t, err)
	for _, d := range r.Decisions {
		require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	}
	_, err = c.Organizations(t.Context())
	require.ErrorIs(t, err, pep.ErrCircuitOpen)
	assert.Equal(t, 3, g.count())
}

func TestBreakerProbe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		healthy   bool // the gateway's state when the probe goes out
		wantState pep.BreakerState
		wantNext  int // gateway requests made by 2 calls after the probe
	}{
		{"successful probe closes", true, pep.BreakerClosed, 2},
		{"failed probe reopens", false, pep.BreakerOpen, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newManualClock()
			g := startReference(t)
			g.configure(t, everyDecisionFails)
			c := breakerClient(t, g, clk)
			for range 3 {
				_, _ = c.Check(t.Context(), "orders", "read")
			}
			require.Equal(t, pep.BreakerOpen, c.Stats().Breaker)

			clk.Advance(4 * time.Second)
			d, _ := c.Check(t.Context(), "orders", "read")
			require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen, "still cooling down")

			clk.Advance(time.Second)
			assert.Equal(t, pep.BreakerHalfOpen, c.Stats().Breaker)
			if tt.healthy {
				g.configure(t, `{}`)
			}
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			assert.Equal(t, tt.healthy, d.Allowed())
			assert.Equal(t, 4, g.count(), "exactly one probe")
			assert.Equal(t, tt.wantState, c.Stats().Breaker)

			for range 2 {
				_, _ = c.Check(t.Context(), "orders", "read")
			}
			assert.Equal(t, 4+tt.wantNext, g.count())
		})
	}
}

// TestBreakerIgnoresAnswers: answers are not failures, whoever gives them:
// the server's DENY, its 400 for an unknown client and its 401 for an
// expired token, and a 403 and an unparseable 200 from the hook (the server
// gives neither).
func TestBreakerIgnoresAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		clientID string // orders-api when empty
		expired  bool   // alice's token has expired
		hook     gwHook
	}{
		{name: "DENY"},
		{name: "400", clientID: "no-such-client"},
		{name: "403", hook: statusHook(http.StatusForbidden)},
		{name: "401", expired: true},
		{name: "unparseable 200", hook: bodyHook("nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			g.setHook(tt.hook)
			clientID := testClient
			if tt.clientID != "" {
				clientID = tt.clientID
			}
			c := g.newClientOf(t, clientID, breakerOptions(newManualClock())...)
			if tt.expired {
				c.SetToken(g.expiredToken(t, "alice"))
			} else {
				c.SetToken(g.token(t, "alice"))
			}
			for range 10 {
				d, _ := c.Check(t.Context(), "orders", "write")
				assert.False(t, d.Allowed())
			}
			assert.Equal(t, 10, g.count())
			assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
		})
	}
}

// TestBreakerCountsOnlyConsecutiveFailures: the hook fails two requests of
// every three, the server answers the third.
func TestBreakerCountsOnlyConsecutiveFailures(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	// fail, fail, succeed, fail, fail, succeed...: never 3 in a row
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n%3 == 0 {
			return false
		}
		writeError(w, http.StatusServiceUnavailable, "flaky")
		return true
	})
	c := breakerClient(t, g, newManualClock())
	for i := range 12 {
		d, _ := c.Check(t.Context(), "orders", "read")
		assert.Equal(t, i%3 == 2, d.Allowed(), "call %d", i+1)
	}
	assert.Equal(t, 12, g.count())
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
}

func TestBreakerDisabled(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	g.configure(t, everyDecisionFails)
	c := g.newClient(t, noRetry, pep.WithBreaker(0, 0))
	c.SetToken(g.token(t, "alice"))
	for range 10 {
		d, err := c.Check(t.Context(), "orders", "read")
		require.NoError(t, err)
		assert.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	}
	assert.Equal(t, 10, g.count())
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
}

func TestBreakerDefaults(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := startReference(t)
	g.configure(t, everyDecisionFails)
	c := g.newClient(t, noRetry, pep.WithClock(clk.Now))
	c.SetToken(g.token(t, "alice"))
	for range 5 {
		_, _ = c.Check(t.Context(), "orders", "read")
	}
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker, "5 failures open it")
	clk.Advance(5 * time.Second)
	assert.Equal(t, pep.BreakerHalfOpen, c.Stats().Breaker, "after 5 s")
}

func TestBreakerStateString(t *testing.T) {
	t.Parallel()
	for state, want := range map[pep.BreakerState]string{
		pep.BreakerClosed: "closed", pep.BreakerOpen: "open", pep.BreakerHalfOpen: "half-open", 9: "BreakerState(9)",
	} {
		assert.Equal(t, want, state.String())
	}
}
