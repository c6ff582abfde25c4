package pep_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

func init() {
	children["lost-log-panics"] = lostLogPanicsChild
	children["lost-error-panics"] = lostErrorPanicsChild
	children["subscribe-panic-log-panics"] = subscribePanicLogPanicsChild
	children["refused-publish-log-panics"] = refusedPublishLogPanicsChild
}

// levelPanicHandler is a user's slog handler that panics on every record
// at or above level (a handler with a bug in its Warn path).
type levelPanicHandler struct{ level slog.Level }

func (h levelPanicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h levelPanicHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h levelPanicHandler) WithGroup(string) slog.Handler            { return h }
func (h levelPanicHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= h.level {
		panic("a bug in the user's log handler: " + r.Message)
	}
	return nil
}

// msgPanicHandler panics on the records whose message begins with msg.
type msgPanicHandler struct{ msg string }

func (h msgPanicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h msgPanicHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h msgPanicHandler) WithGroup(string) slog.Handler            { return h }
func (h msgPanicHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		panic("a bug in the user's log handler: " + r.Message)
	}
	return nil
}

// downInvalidator's Subscribe returns err at once (Redis down, say),
// telling subscribed of each call.
type downInvalidator struct {
	err        error
	subscribed chan struct{}
}

func (d *downInvalidator) Publish(context.Context, []byte) error { return nil }
func (d *downInvalidator) Subscribe(context.Context, invalidation.Receiver) error {
	select {
	case d.subscribed <- struct{}{}:
	default:
	}
	return d.err
}

// panickyError is the user's error whose Error method panics.
type panickyError struct{}

func (panickyError) Error() string { panic("a bug in the user's error's Error method") }

// resubscribes makes a client whose channel is down (Subscribe fails with
// err at once) with logger, and exits 0 once Subscribe was called again:
// the subscription goroutine went through the loss (its log line, the
// error's text) and its pause, and the process is alive.
func resubscribes(err error, logger *slog.Logger) int {
	inv := &downInvalidator{err: err, subscribed: make(chan struct{})}
	c, cerr := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
		pep.WithInvalidator(inv), pep.WithLogger(logger))
	if cerr != nil {
		fmt.Fprintln(os.Stderr, cerr)
		return 3
	}
	defer c.Close()
	for range 2 {
		select {
		case <-inv.subscribed:
		case <-time.After(5 * time.Second):
			fmt.Fprintln(os.Stderr, "the client did not subscribe again")
			return 1
		}
	}
	return 0
}

func lostLogPanicsChild() int {
	return resubscribes(errors.New("redis: connection refused"), slog.New(levelPanicHandler{level: slog.LevelWarn}))
}

func lostErrorPanicsChild() int {
	return resubscribes(panickyError{}, slog.New(slog.DiscardHandler))
}

// subscribePanicLogPanicsChild: the Invalidator's Subscribe panics, and the
// user's handler panics on the Error line that logs it.
func subscribePanicLogPanicsChild() int {
	inv := &panickyInvalidator{resubscribe: make(chan struct{}), publishing: make(chan struct{}, 1)}
	c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
		pep.WithInvalidator(inv), pep.WithLogger(slog.New(levelPanicHandler{level: slog.LevelError})))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer c.Close()
	select {
	case <-inv.resubscribe:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "the client did not subscribe again after Subscribe panicked")
		return 1
	}
	return 0
}

// failingPublisher is subscribed and healthy, but its Publish fails,
// telling published of each call.
type failingPublisher struct {
	upSubscription
	published chan struct{}
}

func (f *failingPublisher) Publish(context.Context, []byte) error {
	select { // the first call is told; the retries' are not
	case f.published <- struct{}{}:
	default:
	}
	return errors.New("redis: READONLY")
}

// refused401 is a transport whose gateway refuses every token (401).
var refused401 = roundTripFunc(func(r *http.Request) (*http.Response, error) {
	resp := cannedResponse(r, http.StatusUnauthorized, []byte(`{"error":"Unauthorized","message":"token revoked"}`))
	resp.Header.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	return resp, nil
})

// refusedClient is a client, closed when the test ends, of a gateway that
// refuses every token (refused401), its purges published through inv.
func refusedClient(t *testing.T, inv pep.Invalidator) *pep.Client {
	return mustPep(t, "http://gateway.invalid", "acme", "orders-api",
		pep.WithHTTPClient(&http.Client{Transport: refused401}), pep.WithInvalidator(inv))
}

// refusedPublishLogPanicsChild: the publication of a refused token's purge
// fails, and the user's handler panics on the line that logs it, on the
// publishing goroutine.
func refusedPublishLogPanicsChild() int {
	inv := &failingPublisher{published: make(chan struct{}, 1)}
	c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
		pep.WithHTTPClient(&http.Client{Transport: refused401}), pep.WithInvalidator(inv),
		pep.WithLogger(slog.New(msgPanicHandler{msg: "pep: could not tell the other replicas of a refused token"})))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	c.SetToken("alice-token")
	_, _ = c.Check(context.Background(), "orders", "read")
	select {
	case <-inv.published:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "the refused token's purge was not published")
		return 1
	}
	_ = c.Close() // waits for the publication, and its log line, to end
	return 0
}

// User code the client runs on goroutines of its own in the background
// (the subscription to the invalidation channel, the publication of a
// refused token's purge) never ends the process, whatever part of it
// panics: the Invalidator, the Error method of the error it returned, or
// the user's logger on the line that reports either. Each goroutine's
// whole body runs under one recover, the log line of a recovered panic
// included; the subscription goes on. (Each of these used to end the
// process.) The cases run in child processes.
func TestBackgroundUserCodeNeverEndsTheProcess(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"lost-log-panics", "lost-error-panics", "subscribe-panic-log-panics", "refused-publish-log-panics"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runChild(t, name)
		})
	}
}

// goexitPublisher's Publish ends its goroutine (runtime.Goexit) while
// goexit is set; else it takes the message, counted in delivered.
type goexitPublisher struct {
	upSubscription
	goexit    atomic.Bool
	delivered atomic.Int64
}

func (p *goexitPublisher) Publish(context.Context, []byte) error {
	if p.goexit.Load() {
		runtime.Goexit()
	}
	p.delivered.Add(1)
	return nil
}

// A Publish that ends its goroutine (runtime.Goexit) neither keeps its
// publisher's place nor loses the purge it was given: once the
// Invalidator works again, every refused token's purge is delivered,
// however many publications ended so before. (Each used to keep its slot
// for good, and after maxRefusedInFlight (64) of them no refused token was
// ever published again; later such a purge was dropped.)
func TestAPublishThatEndsItsGoroutineReleasesItsSlot(t *testing.T) {
	t.Parallel()
	const tokens = 65 // past core's 64 publishers
	inv := &goexitPublisher{}
	inv.goexit.Store(true)
	c := refusedClient(t, inv)
	for i := range tokens {
		_, _ = c.Check(pep.WithToken(t.Context(), fmt.Sprintf("revoked-%d", i)), "orders", "read")
	}
	// Each publication that ended so is counted as a failure.
	require.Eventually(t, func() bool { return c.Stats().InvalidationPublishFailures >= tokens }, 5*time.Second, time.Millisecond, "publications that ended their goroutine, counted: %d", c.Stats().InvalidationPublishFailures)
	inv.goexit.Store(false) // the Invalidator works again
	require.Eventually(t, func() bool { return inv.delivered.Load() == 2*tokens }, 10*time.Second, time.Millisecond,
		"messages delivered: %d of %d", inv.delivered.Load(), 2*tokens)
}
