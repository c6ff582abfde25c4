package transport

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unfired is a context whose deadline a test moves into the past without
// its timer firing: Done never closes and Err stays nil. It is what a call
// sees when a frozen process (SIGSTOP, a paused VM) resumes, before the
// runtime runs its timers.
type unfired struct {
	context.Context
	deadline atomic.Pointer[time.Time]
}

// newUnfired returns an unfired context whose deadline is d from now.
func newUnfired(d time.Duration) *unfired {
	c := &unfired{Context: context.Background()}
	at := time.Now().Add(d)
	c.deadline.Store(&at)
	return c
}

func (c *unfired) Deadline() (time.Time, bool) { return *c.deadline.Load(), true }

// pass makes the deadline now: from here on it has passed, and the
// context's timer has still not fired.
func (c *unfired) pass() {
	now := time.Now()
	c.deadline.Store(&now)
}

// requireDeadlineCause fails the test unless err is the fail-closed Cause
// of a passed deadline.
func requireDeadlineCause(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// newTestExchanger returns an Exchanger for srv without retries, with a
// breaker that opens on the first failure.
func newTestExchanger(srv *httptest.Server) *Exchanger {
	logger := slog.New(slog.DiscardHandler)
	return &Exchanger{Base: srv.Client().Transport, Logger: logger, Observe: quietObserver{},
		Retry:   RetryPolicy{Logger: logger, Retries: new(atomic.Uint64)},
		Breaker: NewBreaker(1, time.Hour, time.Now, nil)}
}

// TestAnswerAfterTheDeadlineIsNotUsed: a 200 read after the call's
// deadline, with the context's timer not yet fired (the server answered
// while the process was frozen), is not returned; the call gets the Cause
// of a passed deadline. It counts against the breaker only when the
// deadline was the client's own timeout (a gateway slower than it), never
// when it was the caller's earlier one.
func TestAnswerAfterTheDeadlineIsNotUsed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		ownDeadline bool
		breaker     BreakerState
	}{
		{"the client's own timeout", true, BreakerOpen},
		{"the caller's earlier deadline", false, BreakerClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := newUnfired(time.Hour)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				ctx.pass() // the answer is made; the caller's time runs out before it is read
				_, _ = w.Write([]byte(`{"decision":"GRANT"}`))
			}))
			t.Cleanup(srv.Close)
			x := newTestExchanger(srv)
			data, err := x.Post(ctx, &stampCredential{}, srv.URL, []byte(`{}`), nil, tc.ownDeadline)
			requireDeadlineCause(t, err)
			assert.Nil(t, data)
			assert.Equal(t, tc.breaker, x.Breaker.Current())
		})
	}
}

// TestNothingIsSentPastTheDeadline: a call whose deadline has passed,
// though its context's timer has not fired, sends nothing and gets the
// Cause of a passed deadline; the server said nothing, so the breaker
// does not count it even when the deadline was the client's own.
func TestNothingIsSentPastTheDeadline(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	x := newTestExchanger(srv)
	ctx := newUnfired(time.Hour)
	ctx.pass()
	data, err := x.Post(ctx, &stampCredential{}, srv.URL, []byte(`{}`), nil, true)
	requireDeadlineCause(t, err)
	assert.Nil(t, data)
	assert.Zero(t, reached.Load(), "a request was sent past its deadline")
	assert.Zero(t, x.Sent.Load())
	assert.Equal(t, BreakerClosed, x.Breaker.Current())
}
