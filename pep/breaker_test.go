package pep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// breakerClient returns a client with a 3-failure, 5 s breaker on a manual
// clock, without retries so that one call is one gateway request.
func breakerClient(t *testing.T, g *gateway, clk *manualClock) *pep.Client {
	t.Helper()
	c := g.newClient(t, noRetry, pep.WithBreaker(3, 5*time.Second), pep.WithClock(clk.Now), pep.WithCache(0, 0, 0))
	c.SetToken(aliceToken)
	return c
}

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := newGateway(t)
	g.setHook(statusHook(http.StatusServiceUnavailable))
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
			g := newGateway(t)
			g.setHook(statusHook(http.StatusBadGateway))
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
				g.setHook(nil)
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

func TestBreakerIgnoresAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		hook gwHook
	}{
		{"DENY", nil},
		{"400", statusHook(http.StatusBadRequest)},
		{"403", statusHook(http.StatusForbidden)},
		{"401", statusHook(http.StatusUnauthorized)},
		{"unparseable 200", bodyHook("nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			g.setHook(tt.hook)
			c := breakerClient(t, g, newManualClock())
			for range 10 {
				_, _ = c.Check(t.Context(), "orders", "write")
			}
			assert.Equal(t, 10, g.count())
			assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
		})
	}
}

func TestBreakerCountsOnlyConsecutiveFailures(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	// fail, fail, succeed, fail, fail, succeed...: never 3 in a row
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n%3 == 0 {
			return false
		}
		writeError(w, http.StatusServiceUnavailable, "flaky")
		return true
	})
	c := breakerClient(t, g, newManualClock())
	for range 12 {
		_, _ = c.Check(t.Context(), "orders", "read")
	}
	assert.Equal(t, 12, g.count())
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
}

func TestBreakerDisabled(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.setHook(statusHook(http.StatusServiceUnavailable))
	c := g.newClient(t, noRetry, pep.WithBreaker(0, 0))
	c.SetToken(aliceToken)
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
	g := newGateway(t)
	g.setHook(statusHook(http.StatusServiceUnavailable))
	c := g.newClient(t, noRetry, pep.WithClock(clk.Now))
	c.SetToken(aliceToken)
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
