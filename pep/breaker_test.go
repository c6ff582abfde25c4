package pep_test

// The breaker's rules (what counts as a failure, the probe, the cool-down)
// are internal/transport's and tested there (breaker_test.go,
// outcome_test.go); these tests hold the promises the client makes with
// it: WithBreaker and its defaults, every call refused without a request
// while it is open, and its changes logged. That a caller's own deadline
// is never counted against it (rule 11) is TestPostOutcomes's, with the
// client's side (which deadline is its own) in internal/core's
// TestOnlyTheClientsTimeoutIsItsOwn.

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// breakerOptions make a client with a 3-failure, 5 s breaker on a manual
// clock, without retries so that one call is one gateway request, and
// without a cache so that every call is one.
func breakerOptions(clk *testkit.Clock) []pep.Option {
	return []pep.Option{noRetry, pep.WithBreaker(3, 5*time.Second), pep.WithClock(clk.Now), pep.WithCache(0, 0, 0)}
}

// breakerClient returns an orders-api client of alice with breakerOptions.
func breakerClient(t *testing.T, g *reference, clk *testkit.Clock) *pep.Client {
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
		d := checked(t, c, "orders", "read")
		assert.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	}
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker)

	d := checked(t, c, "orders", "read")
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	assert.Equal(t, 3, g.count(), "an open breaker does not call the gateway")

	r := checkedMany(t, c, t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	for _, d := range r.Decisions {
		require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	}
	_, err := c.Organizations(t.Context())
	require.ErrorIs(t, err, pep.ErrCircuitOpen)
	assert.Equal(t, 3, g.count())
}

// TestBreakerOptions: WithBreaker(0, 0) turns the breaker off; without
// WithBreaker, 5 consecutive failures open it for 5 s.
func TestBreakerOptions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		opts        []pep.Option
		failures    int
		want, after pep.BreakerState // after the failures, and 5 s later
	}{
		{"disabled", []pep.Option{pep.WithBreaker(0, 0)}, 10, pep.BreakerClosed, pep.BreakerClosed},
		{"defaults", nil, 5, pep.BreakerOpen, pep.BreakerHalfOpen},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newManualClock()
			g := startReference(t)
			g.configure(t, everyDecisionFails)
			c := g.newClient(t, append([]pep.Option{noRetry, pep.WithClock(clk.Now)}, tt.opts...)...)
			c.SetToken(g.token(t, "alice"))
			for range tt.failures {
				d := checked(t, c, "orders", "read")
				assert.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen)
			}
			assert.Equal(t, tt.failures, g.count())
			assert.Equal(t, tt.want, c.Stats().Breaker)
			clk.Advance(5 * time.Second)
			assert.Equal(t, tt.after, c.Stats().Breaker)
		})
	}
}

// failFirst answers the first len(statuses) requests with those statuses
// (and headers), then lets the gateway answer.
func failFirst(header http.Header, statuses ...int) gwHook {
	return func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n > len(statuses) {
			return false
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		writeError(w, statuses[n-1], "injected")
		return true
	}
}

// breakerLog records the client's "circuit breaker changed" lines.
type breakerLog struct {
	mu      sync.Mutex
	changes [][2]string // from, to
	levels  []slog.Level
}

func (l *breakerLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *breakerLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *breakerLog) WithGroup(string) slog.Handler            { return l }
func (l *breakerLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "pep: circuit breaker changed" {
		return nil
	}
	var from, to string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "from":
			from = a.Value.String()
		case "to":
			to = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, [2]string{from, to})
	l.levels = append(l.levels, r.Level)
	return nil
}

func TestBreakerTransitionsAreLogged(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := startReference(t)
	g.configure(t, everyDecisionFails)
	log := &breakerLog{}
	c := g.newClient(t, noRetry, pep.WithBreaker(1, 5*time.Second), pep.WithClock(clk.Now),
		pep.WithCache(0, 0, 0), pep.WithLogger(slog.New(log)))
	c.SetToken(g.token(t, "alice"))

	_, _ = c.Check(t.Context(), "orders", "read") // closed -> open
	clk.Advance(5 * time.Second)
	_, _ = c.Check(t.Context(), "orders", "read") // open -> half-open -> open
	clk.Advance(5 * time.Second)
	g.configure(t, `{}`)
	d := checked(t, c, "orders", "read") // open -> half-open -> closed
	requireGatewayDecision(t, d, pep.Grant)

	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, [][2]string{
		{"closed", "open"},
		{"open", "half-open"}, {"half-open", "open"},
		{"open", "half-open"}, {"half-open", "closed"},
	}, log.changes)
	for _, l := range log.levels {
		assert.Equal(t, slog.LevelWarn, l, "breaker changes are logged at Warn")
	}
}
