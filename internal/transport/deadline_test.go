package transport

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// requireDeadlineCause fails the test unless err is the fail-closed Cause
// of a passed deadline.
func requireDeadlineCause(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// newTestExchanger returns an Exchanger for srv without retries, with a
// breaker that opens on the first failure.
func newTestExchanger(srv *gatewaytest.Server) *Exchanger {
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
			ctx := frozentest.NewUnfired(time.Hour)
			srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				ctx.Pass() // the answer is made; the caller's time runs out before it is read
				gatewaytest.Answer(http.StatusOK, "", `{"decision":"GRANT"}`)(w, r)
			})
			x := newTestExchanger(srv)
			data, err := x.Post(ctx, &stampCredential{}, srv.URL, []byte(`{}`), nil, tc.ownDeadline, nil)
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
	srv := gatewaytest.Start(t, gatewaytest.Answer(http.StatusOK, "", `{}`))
	x := newTestExchanger(srv)
	ctx := frozentest.NewUnfired(time.Hour)
	ctx.Pass()
	data, err := x.Post(ctx, &stampCredential{}, srv.URL, []byte(`{}`), nil, true, nil)
	requireDeadlineCause(t, err)
	assert.Nil(t, data)
	assert.Zero(t, srv.Requests(), "a request was sent past its deadline")
	assert.Zero(t, x.Sent.Load())
	assert.Equal(t, BreakerClosed, x.Breaker.Current())
}
