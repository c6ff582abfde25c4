package pep_test

// Circuit breaker transitions not covered by breaker_test.go: one probe at
// a time, the cool-down restarting at a failed probe, what counts as a
// failure (after retries, transport failures, timeouts, 5xx) and what a
// probe's answer does, and the log line of every transition. Time is the
// client's injected clock; blocking is done with channels.

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// btMode is how the breaker tests' gateway answers.
type btMode int32

const (
	btGrant     btMode = iota // 200 granting orders/read
	btDeny                    // 200 denying it
	bt403                     // 403
	bt429                     // 429 without Retry-After
	bt500                     // 500
	bt503                     // 503
	btMalformed               // 200 with a body that does not parse
	btHold                    // no answer until the client gives up
	btBlock                   // signal arrived, answer btGrant once release is closed
)

// btGateway is a gateway whose behaviour the test switches between calls.
type btGateway struct {
	*faultGateway
	mode    atomic.Int32
	arrived chan struct{} // receives once per btBlock request
	release chan struct{} // closed to let btBlock requests answer
}

func newBTGateway(t *testing.T, mode btMode) *btGateway {
	t.Helper()
	g := &btGateway{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	g.set(mode)
	g.faultGateway = newFaultGateway(t, func(fg *faultGateway, w http.ResponseWriter, r *http.Request) {
		switch btMode(g.mode.Load()) {
		case btGrant:
			faultOK(w)
		case btDeny:
			faultAnswer(w, http.StatusOK, "application/json",
				`{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"}]}`)
		case bt403:
			faultStatus(http.StatusForbidden, nil)(w)
		case bt429:
			faultStatus(http.StatusTooManyRequests, nil)(w)
		case bt500:
			faultStatus(http.StatusInternalServerError, nil)(w)
		case bt503:
			faultStatus(http.StatusServiceUnavailable, nil)(w)
		case btMalformed:
			faultAnswer(w, http.StatusOK, "application/json", `{"status":`)
		case btHold:
			fg.hold(r)
		case btBlock:
			g.arrived <- struct{}{}
			select {
			case <-g.release:
				faultOK(w)
			case <-fg.closing:
			}
		}
	})
	return g
}

func (g *btGateway) set(m btMode) { g.mode.Store(int32(m)) }

// btClient returns a client of g with a breaker of failures and a 5 s
// cool-down on clk, no cache and no retries unless opts say otherwise.
func btClient(t *testing.T, url string, failures int, clk *manualClock, opts ...pep.Option) *pep.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	all := append([]pep.Option{
		pep.WithHTTPClient(&http.Client{Transport: tr}),
		noRetry,
		pep.WithBreaker(failures, 5*time.Second),
		pep.WithClock(clk.Now),
		pep.WithCache(0, 0, 0),
	}, opts...)
	c, err := pep.New(url, testRealm, testClient, all...)
	require.NoError(t, err)
	c.SetToken(faultToken)
	return c
}

// btRequireOpen checks that a call for orders/scope is denied by the open
// breaker without a gateway request.
func btRequireOpen(t *testing.T, c *pep.Client, requests func() int64, scope string) {
	t.Helper()
	before := requests()
	d, err := c.Check(t.Context(), "orders", scope)
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	assert.Equal(t, before, requests(), "an open breaker calls nobody")
}

func TestBreakerAllowsOneProbeAtATime(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := newBTGateway(t, bt503)
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	c := btClient(t, g.URL, 1, clk)
	_, _ = c.Check(t.Context(), "orders", "read")
	require.Equal(t, pep.BreakerOpen, c.Stats().Breaker)

	clk.Advance(5 * time.Second)
	g.set(btBlock)
	probe := make(chan pep.Decision, 1)
	go func() {
		d, _ := c.Check(t.Context(), "orders", "read")
		probe <- d
	}()
	<-g.arrived // the probe is at the gateway

	// Other requests are refused while the probe is out. (An identical
	// request would share the probe's flight instead: coalescing.)
	for _, scope := range []string{"write", "delete", "pay"} {
		btRequireOpen(t, c, g.requests.Load, scope)
	}
	_, err := c.Organizations(t.Context())
	require.ErrorIs(t, err, pep.ErrCircuitOpen, "Organizations is refused while the probe is out")
	assert.Equal(t, pep.BreakerHalfOpen, c.Stats().Breaker)
	assert.Equal(t, int64(2), g.requests.Load(), "one failure and one probe")

	close(g.release)
	d := <-probe
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, int64(3), g.requests.Load())
}

func TestBreakerCoolDownRestartsAtAFailedProbe(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := newBTGateway(t, bt503)
	c := btClient(t, g.URL, 2, clk)
	for range 2 {
		_, _ = c.Check(t.Context(), "orders", "read")
	}
	require.Equal(t, pep.BreakerOpen, c.Stats().Breaker)

	clk.Advance(5 * time.Second)
	d, err := c.Check(t.Context(), "orders", "read") // the probe fails
	require.NoError(t, err)
	require.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen, "the probe reached the gateway")
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker)
	assert.Equal(t, int64(3), g.requests.Load())

	clk.Advance(5*time.Second - time.Millisecond)
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker, "a new cool-down started at the failed probe")
	btRequireOpen(t, c, g.requests.Load, "read")

	clk.Advance(time.Millisecond)
	assert.Equal(t, pep.BreakerHalfOpen, c.Stats().Breaker)
	g.set(btGrant)
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)

	// Closing forgot the failures before the trip: it takes a full run of
	// consecutive failures to open again.
	g.set(bt503)
	_, _ = c.Check(t.Context(), "orders", "read")
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
	_, _ = c.Check(t.Context(), "orders", "read")
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker)
}

func TestBreakerFailureKinds(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		return "http://" + addr
	}
	gw := func(m btMode) func(t *testing.T) string {
		return func(t *testing.T) string { return newBTGateway(t, m).URL }
	}
	tests := []struct {
		name     string
		gateway  func(t *testing.T) string
		opts     []pep.Option
		wantOpen bool
	}{
		{"connection refused opens", refused, nil, true},
		{"timeout opens", gw(btHold), []pep.Option{pep.WithTimeout(50 * time.Millisecond)}, true},
		{"500 does not open: one request's failure, not the gateway's", gw(bt500), nil, false},
		{"503 after retries opens", gw(bt503), []pep.Option{pep.WithRetry(2, time.Millisecond, 2*time.Millisecond)}, true},
		{"DENY does not open", gw(btDeny), nil, false},
		{"403 does not open", gw(bt403), nil, false},
		{"429 after retries does not open", gw(bt429), []pep.Option{pep.WithRetry(2, time.Millisecond, 2*time.Millisecond)}, false},
		{"unparseable 200 does not open", gw(btMalformed), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := btClient(t, tt.gateway(t), 2, newManualClock(), tt.opts...)
			for i := range 2 {
				d, err := c.Check(t.Context(), "orders", "read")
				require.NoError(t, err)
				assert.False(t, d.Allowed())
				assert.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen, "call %d went out", i+1)
			}
			if !tt.wantOpen {
				assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
				return
			}
			// A timed-out request reports to the breaker when its own
			// deadline ends, which may be just after the caller returned.
			require.Eventually(t, func() bool { return c.Stats().Breaker == pep.BreakerOpen },
				5*time.Second, time.Millisecond)
			sent := c.Stats().GatewayRequests
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
			assert.Equal(t, sent, c.Stats().GatewayRequests, "an open breaker calls nobody")
		})
	}
}

func TestBreakerCountsACallOnceWhateverItsRetries(t *testing.T) {
	t.Parallel()
	g := newBTGateway(t, bt503)
	c := btClient(t, g.URL, 2, newManualClock(), pep.WithRetry(2, time.Millisecond, 2*time.Millisecond))
	_, _ = c.Check(t.Context(), "orders", "read")
	assert.Equal(t, int64(3), g.requests.Load())
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker, "three failed attempts are one failed call")
	_, _ = c.Check(t.Context(), "orders", "read")
	assert.Equal(t, pep.BreakerOpen, c.Stats().Breaker)
	btRequireOpen(t, c, g.requests.Load, "read")
}

func TestBreakerProbeOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		probe     btMode
		wantState pep.BreakerState
	}{
		{"GRANT closes", btGrant, pep.BreakerClosed},
		{"DENY closes", btDeny, pep.BreakerClosed},
		{"403 closes", bt403, pep.BreakerClosed},
		{"unparseable 200 closes", btMalformed, pep.BreakerClosed},
		{"500 closes: the gateway answered", bt500, pep.BreakerClosed},
		{"503 reopens", bt503, pep.BreakerOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newManualClock()
			g := newBTGateway(t, bt503)
			c := btClient(t, g.URL, 1, clk)
			_, _ = c.Check(t.Context(), "orders", "read")
			require.Equal(t, pep.BreakerOpen, c.Stats().Breaker)
			clk.Advance(5 * time.Second)
			g.set(tt.probe)
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			assert.NotErrorIs(t, d.Cause, pep.ErrCircuitOpen)
			assert.Equal(t, int64(2), g.requests.Load(), "the probe went out")
			assert.Equal(t, tt.wantState, c.Stats().Breaker)
			if tt.wantState == pep.BreakerOpen {
				btRequireOpen(t, c, g.requests.Load, "read")
			}
		})
	}
}

// btLog records the client's log records.
type btLog struct {
	mu      sync.Mutex
	changes [][2]string // from, to of every "circuit breaker changed"
	levels  []slog.Level
}

func (l *btLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *btLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *btLog) WithGroup(string) slog.Handler            { return l }
func (l *btLog) Handle(_ context.Context, r slog.Record) error {
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

func (l *btLog) seen() ([][2]string, []slog.Level) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][2]string(nil), l.changes...), append([]slog.Level(nil), l.levels...)
}

func TestBreakerTransitionsAreLogged(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	g := newBTGateway(t, bt503)
	log := &btLog{}
	c := btClient(t, g.URL, 1, clk, pep.WithLogger(slog.New(log)))

	_, _ = c.Check(t.Context(), "orders", "read") // closed -> open
	clk.Advance(5 * time.Second)
	_, _ = c.Check(t.Context(), "orders", "read") // open -> half-open -> open
	clk.Advance(5 * time.Second)
	g.set(btGrant)
	_, _ = c.Check(t.Context(), "orders", "read") // open -> half-open -> closed

	changes, levels := log.seen()
	assert.Equal(t, [][2]string{
		{"closed", "open"},
		{"open", "half-open"}, {"half-open", "open"},
		{"open", "half-open"}, {"half-open", "closed"},
	}, changes)
	for _, l := range levels {
		assert.Equal(t, slog.LevelWarn, l, "breaker changes are logged at Warn")
	}
}

// Rule 11: a caller whose own deadline is shorter than the client's timeout
// says nothing about the gateway when it runs out, so callers in a hurry
// cannot open the breaker for everyone else.
func TestBreakerIgnoresCallersOwnDeadlines(t *testing.T) {
	t.Parallel()
	g := newBTGateway(t, btHold)
	c := btClient(t, g.URL, 2, newManualClock(), pep.WithTimeout(time.Minute))
	for range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		d, err := c.Check(ctx, "orders", "read")
		cancel()
		require.NoError(t, err)
		assert.False(t, d.Allowed())
		require.ErrorIs(t, d.Cause, context.DeadlineExceeded)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for range 3 {
		_, _ = c.Check(cancelled, "orders", "read")
	}
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
}
