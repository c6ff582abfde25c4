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
)

// recovered runs f, as the middleware and the interceptors run a call,
// and reports whether it panicked.
func recovered(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// panicky is a user's base transport that panics while armed, keeping the
// context of the request it panicked under, and otherwise lets next
// answer.
type panicky struct {
	next  http.RoundTripper
	armed atomic.Bool
	ctx   atomic.Pointer[context.Context]
	idleCounter
}

func (p *panicky) RoundTrip(r *http.Request) (*http.Response, error) {
	if p.armed.Load() {
		ctx := r.Context()
		p.ctx.Store(&ctx)
		panic("a bug in the user's transport")
	}
	return p.next.RoundTrip(r)
}

func newPanicky(next http.RoundTripper, retry RetryPolicy, b *Breaker) (*Exchanger, *panicky) {
	logger := slog.New(slog.DiscardHandler)
	retry.Logger, retry.Retries = logger, new(atomic.Uint64)
	base := &panicky{next: next}
	return &Exchanger{Peer: "pep: gateway", Base: base, OwnsBase: true, Logger: logger, Observe: quietObserver{}, Retry: retry, Breaker: b}, base
}

// A panic under a request (in the user's base transport) releases what
// the request reserved, as its return would: the breaker's half-open
// probe (the next request is the probe), the count of requests under way
// (the last one to end after Close still closes the idle connections),
// and the context of an attempt under its own timeout.
func TestPanicUnderARequestReleasesIt(t *testing.T) {
	t.Parallel()
	const url = "https://gw.example/decide"

	t.Run("the breaker's probe", func(t *testing.T) {
		t.Parallel()
		var now atomic.Int64
		status := atomic.Int32{}
		status.Store(503)
		gw := roundTripFunc(func(r *http.Request) (*http.Response, error) { return answer(int(status.Load()), `{}`)(r) })
		x, base := newPanicky(gw, RetryPolicy{}, NewBreaker(1, time.Second, func() time.Time { return time.Unix(0, now.Load()) }, nil))
		_, err := x.Post(t.Context(), bearerCred, url, nil, nil, true, nil)
		require.ErrorIs(t, err, ErrUnavailable)
		require.Equal(t, BreakerOpen, x.Breaker.Current())
		now.Add(int64(time.Second)) // the cool-down is over: the next request is the probe
		base.armed.Store(true)
		require.True(t, recovered(func() { _, _ = x.Post(t.Context(), bearerCred, url, nil, nil, true, nil) }), "the probe panicked")
		base.armed.Store(false)
		status.Store(200)
		_, err = x.Post(t.Context(), bearerCred, url, nil, nil, true, nil)
		require.NoError(t, err, "the next request is the probe")
		assert.Equal(t, BreakerClosed, x.Breaker.Current())
	})

	t.Run("the requests under way", func(t *testing.T) {
		t.Parallel()
		x, base := newPanicky(answer(200, `{}`), RetryPolicy{}, nil)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://gw.example/.well-known/x", nil)
		require.NoError(t, err)
		base.armed.Store(true)
		require.True(t, recovered(func() { _, _ = x.Fetch(req) }), "the Fetch panicked")
		base.armed.Store(false)
		resp, err := x.Fetch(req) // under way when Close is called
		require.NoError(t, err)
		x.Close()
		require.EqualValues(t, 1, base.closed.Load())
		require.NoError(t, resp.Body.Close())
		assert.EqualValues(t, 2, base.closed.Load(), "the last request under way has ended: its connection is closed")
	})

	t.Run("an attempt's context", func(t *testing.T) {
		t.Parallel()
		x, base := newPanicky(answer(200, `{}`), RetryPolicy{AttemptTimeout: time.Hour}, nil)
		base.armed.Store(true)
		require.True(t, recovered(func() { _, _ = x.Post(t.Context(), bearerCred, url, nil, nil, true, nil) }), "the attempt panicked")
		ctx := *base.ctx.Load()
		require.ErrorIs(t, ctx.Err(), context.Canceled, "the attempt's context (and its hour-long timer) ended with it")
	})
}
