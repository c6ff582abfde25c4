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
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/invalidation"
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
			c.SetToken(g.token(t, "alice"))

			checked(t, c, "orders", "read") // the gateway fails: the breaker opens
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
			d := checked(t, c, "orders", "read")
			requireGatewayDecision(t, d, pep.Grant)
			require.Equal(t, pep.BreakerClosed, c.Stats().Breaker)
		})
	}
}

func init() {
	children["chunk-panic"] = chunkPanicChild
	children["invalidator-panic"] = invalidatorPanicChild
}

// runChild runs the child named name and fails t, with its output, unless
// it exits 0.
func runChild(t *testing.T, name string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child %s failed:\n%.2000s", name, out)
}

// chunkPanicChild makes a CheckMany of three pairs in chunks of one
// through a transport that panics, as the middleware and the interceptors
// make it; it exits 0 when the process survived and the call panicked on
// the caller's goroutine with the transport's own value, as a call of one
// chunk does.
func chunkPanicChild() int {
	rt := roundTripFunc(func(*http.Request) (*http.Response, error) { panic(errTransportBug) })
	for _, batch := range []int{3, 1} { // one chunk, then three
		c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
			pep.WithHTTPClient(&http.Client{Transport: rt}), pep.WithBatchSize(batch))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		c.SetToken("alice-token")
		got := recoverCall(func() {
			_, _ = c.CheckMany(context.Background(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write", "delete"}}})
		})
		_ = c.Close()
		if got != errTransportBug {
			fmt.Fprintf(os.Stderr, "batch size %d: the caller recovered %v, not the transport's panic\n", batch, got)
			return 1
		}
	}
	return 0
}

// A panic under one chunk of a call that has several (CheckMany and
// ListGranted past the batch size) runs on a goroutine of the client's
// own. It reaches the caller's goroutine, as the same panic of a call of
// one chunk does, once the other chunks have ended, rather than end the
// process where nothing can recover it.
func TestChunkPanicReachesTheCaller(t *testing.T) {
	t.Parallel()
	runChild(t, "chunk-panic")
}

// panickyInvalidator is a user's Invalidator whose Publish always panics
// and whose Subscribe panics on its first call; its next call reports a
// heartbeat and holds until the client closes.
type panickyInvalidator struct {
	subscribes  atomic.Int32
	resubscribe chan struct{}
	publishing  chan struct{} // a value per Publish, before it panics
}

func (p *panickyInvalidator) Publish(context.Context, []byte) error {
	select { // the first call is told; the retries' are not
	case p.publishing <- struct{}{}:
	default:
	}
	panic("a bug in the user's Publish")
}

func (p *panickyInvalidator) Subscribe(ctx context.Context, r invalidation.Receiver) error {
	if p.subscribes.Add(1) == 1 {
		panic("a bug in the user's Subscribe")
	}
	r.Heartbeat(time.Now())
	close(p.resubscribe)
	<-ctx.Done()
	return ctx.Err()
}

// invalidatorPanicChild runs a client whose Invalidator panics on the
// client's own goroutines: the subscription, and the publication of a
// token the gateway refused (401). It exits 0 when the process survived,
// the client subscribed again, counted the failed publication and logged
// both panics.
func invalidatorPanicChild() int {
	inv := &panickyInvalidator{resubscribe: make(chan struct{}), publishing: make(chan struct{}, 1)}
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp := cannedResponse(r, http.StatusUnauthorized, []byte(`{"error":"Unauthorized","message":"token revoked"}`))
		resp.Header.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		return resp, nil
	})
	var log testkit.SyncBuffer
	c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
		pep.WithHTTPClient(&http.Client{Transport: rt}), pep.WithInvalidator(inv),
		pep.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	c.SetToken("alice-token")
	hang := time.After(time.Minute) // a bound on a hang, not a wait: the pause is 100 ms
	select {
	case <-inv.resubscribe:
	case <-hang:
		fmt.Fprintln(os.Stderr, "the client did not subscribe again after Subscribe panicked")
		return 1
	}
	_, _ = c.Check(context.Background(), "orders", "read") // refused: the purge is published
	select {                                               // before Close, after which nothing is published
	case <-inv.publishing:
	case <-hang:
		fmt.Fprintln(os.Stderr, "the refused token's purge was not published")
		return 1
	}
	_ = c.Close() // waits for the publication to end
	// The failure is counted (and each retry's before Close).
	if n := c.Stats().InvalidationPublishFailures; n < 1 {
		fmt.Fprintf(os.Stderr, "publish failures: %d, want at least 1\n", n)
		return 1
	}
	for _, want := range []string{"the Invalidator's Subscribe panicked", "the Invalidator's Publish panicked"} {
		if !strings.Contains(log.String(), want) {
			fmt.Fprintf(os.Stderr, "no log line says %q:\n%s\n", want, log.String())
			return 1
		}
	}
	if strings.Contains(log.String(), "alice-token") {
		fmt.Fprintln(os.Stderr, "a log line holds the token")
		return 1
	}
	return 0
}

// The client calls the user's Invalidator on goroutines of its own: a
// panic of its Subscribe is logged and Subscribe called again after the
// pause, as when it returns early; a panic of its Publish of a refused
// token is logged and counted as a failed publication. Neither ends the
// process.
func TestInvalidatorPanicsDoNotEndTheProcess(t *testing.T) {
	t.Parallel()
	runChild(t, "invalidator-panic")
}
