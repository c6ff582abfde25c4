package pep_test

// A panic under a call (the RoundTripper given with WithHTTPClient, the
// OpenTelemetry SDK, the slog handler) is the user's bug. It goes on to
// the caller's goroutine, where the middleware and the gRPC interceptors
// recover it and refuse that one request; it never ends the process from
// a goroutine of the client's own, and nothing the call reserved outlives
// it (internal/safego).

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// errTransportBug is what a user's transport panics with.
var errTransportBug = errors.New("a transient bug in the user's transport")

// panicSwitch is a user's RoundTripper around next that panics with
// errTransportBug while armed.
type panicSwitch struct {
	next  http.RoundTripper
	armed atomic.Bool
}

func (p *panicSwitch) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.armed.Load() {
		panic(errTransportBug)
	}
	return p.next.RoundTrip(r)
}

// panickyHandler is a user's slog handler that panics on the log line
// whose message and "to" attribute match while armed.
type panickyHandler struct {
	msg, to string
	armed   *atomic.Bool
}

func (h panickyHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h panickyHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h panickyHandler) WithGroup(string) slog.Handler            { return h }
func (h panickyHandler) Handle(_ context.Context, r slog.Record) error {
	to := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "to" {
			to = a.Value.String()
		}
		return true
	})
	if h.armed.Load() && r.Message == h.msg && to == h.to {
		panic("a bug in the user's log handler")
	}
	return nil
}

// recoverCall runs f as the middleware and the interceptors run a call,
// and returns what it panicked with.
func recoverCall(f func()) (recovered any) {
	defer func() { recovered = recover() }()
	f()
	return nil
}

// The breaker lets one probe through once its cool-down is over, and
// refuses every other call until the probe's outcome comes. A probe that
// panics, in the user's transport or in the user's log handler reporting
// the breaker half-open, ends as a neutral outcome: the next call is the
// probe, and a healthy gateway's GRANT is served. (It used to leave the
// probe reserved for good: every later call of every caller refused with
// ErrCircuitOpen, the panic being recovered by the middleware.)
func TestBreakerProbeThatPanicsIsReleased(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"transport", "logger"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			clk := newManualClock()
			g := startReference(t)
			g.configure(t, everyDecisionFails)
			rt := &panicSwitch{next: g.Client().Transport}
			var logPanics atomic.Bool
			c := g.newClient(t, noRetry, pep.WithBreaker(1, 5*time.Second), pep.WithClock(clk.Now), pep.WithCache(0, 0, 0),
				pep.WithHTTPClient(&http.Client{Transport: rt}),
				pep.WithLogger(slog.New(panickyHandler{msg: "pep: circuit breaker changed", to: "half-open", armed: &logPanics})))
			t.Cleanup(func() { _ = c.Close() })
			c.SetToken(g.token(t, "alice"))

			_, err := c.Check(t.Context(), "orders", "read") // the gateway fails: the breaker opens
			require.NoError(t, err)
			require.Equal(t, pep.BreakerOpen, c.Stats().Breaker)
			clk.Advance(5 * time.Second) // the next call is the probe

			if where == "transport" {
				rt.armed.Store(true)
			} else {
				logPanics.Store(true)
			}
			require.NotNil(t, recoverCall(func() { _, _ = c.Check(t.Context(), "orders", "read") }), "the probe panicked")
			rt.armed.Store(false)
			logPanics.Store(false)

			g.configure(t, `{}`) // the gateway is healthy again
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			requireGatewayDecision(t, d, pep.Grant)
			require.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
		})
	}
}
