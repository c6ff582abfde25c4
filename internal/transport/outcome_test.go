package transport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answer returns a RoundTripper that answers every request with status and
// body.
func answer(status int, body string) roundTripFunc {
	return func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: r}, nil
	}
}

// hold returns a RoundTripper that answers nothing until the request's
// context ends.
func hold() roundTripFunc {
	return func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
}

// bearerCred is a Bearer credential for tests.
var bearerCred = NewBearer("a-token")

// failingCred is a credential that cannot be attached.
type failingCred struct{}

func (failingCred) Ident() Ident                          { return Ident{Scheme: SchemeDPoP, Token: "a-token"} }
func (failingCred) Usable() error                         { return nil }
func (failingCred) Authorize(*http.Request, string) error { return errors.New("the key is gone") }

// TestPostOutcomes: what one request's outcome tells the breaker (rule 11)
// and the error Post returns. Each case is the probe of a half-open
// breaker, so that its outcome shows as the state after it: closed for a
// working server, open for a failing one, still half-open for an outcome
// that says nothing about the server.
func TestPostOutcomes(t *testing.T) {
	t.Parallel()
	released := Hold(NewBearer("a-token"))
	released.Release()
	tests := []struct {
		name string
		base http.RoundTripper
		cred Credential
		ctx  func(t *testing.T) context.Context
		own  bool // the deadline is the client's own timeout
		// hangUp: the caller hangs up (its context is cancelled) while
		// the request is at the server.
		hangUp bool
		want   BreakerState
		isErr  []error // what the error matches; none for a 200
	}{
		{name: "200", base: answer(200, `{}`), want: BreakerClosed},
		{name: "500: one request's failure, not the server's", base: answer(500, `{}`), want: BreakerClosed, isErr: []error{ErrUnavailable}},
		{name: "400", base: answer(400, `{}`), want: BreakerClosed},
		{name: "401", base: answer(401, `{}`), want: BreakerClosed, isErr: []error{ErrUnauthorized}},
		{name: "403", base: answer(403, `{}`), want: BreakerClosed},
		{name: "302 is not followed", base: answer(302, ``), want: BreakerClosed},
		{name: "200 over the body limit", base: answer(200, strings.Repeat(" ", MaxBody+1)), want: BreakerClosed, isErr: []error{ErrMalformedResponse}},
		{name: "502", base: answer(502, `{}`), want: BreakerOpen, isErr: []error{ErrUnavailable}},
		{name: "503", base: answer(503, `{}`), want: BreakerOpen, isErr: []error{ErrUnavailable}},
		{name: "504", base: answer(504, `{}`), want: BreakerOpen, isErr: []error{ErrUnavailable}},
		{name: "429 says nothing", base: answer(429, `{}`), want: BreakerHalfOpen},
		{
			name: "connection refused", want: BreakerOpen, isErr: []error{ErrUnavailable},
			base: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, syscall.ECONNREFUSED }),
		},
		{
			name: "the client's own timeout", base: hold(), own: true, want: BreakerOpen,
			ctx:   deadlineIn(20 * time.Millisecond),
			isErr: []error{ErrUnavailable, context.DeadlineExceeded},
		},
		{
			name: "the caller's earlier deadline says nothing", base: hold(), want: BreakerHalfOpen,
			ctx:   deadlineIn(20 * time.Millisecond),
			isErr: []error{ErrUnavailable, context.DeadlineExceeded},
		},
		{
			name: "a cancelled call says nothing", base: answer(200, `{}`), own: true, want: BreakerHalfOpen,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			isErr: []error{ErrUnavailable, context.Canceled},
		},
		{
			name: "a caller hanging up mid-request says nothing", base: hold(), own: true, hangUp: true, want: BreakerHalfOpen,
			isErr: []error{ErrUnavailable, context.Canceled},
		},
		{name: "a credential that cannot be attached says nothing", base: answer(200, `{}`), cred: failingCred{}, want: BreakerHalfOpen},
		{name: "a released token says nothing", base: answer(200, `{}`), cred: released, want: BreakerHalfOpen, isErr: []error{ErrTokenChanged}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cred, base := t.Context(), tt.cred, tt.base
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			if tt.hangUp {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
					cancel()
					return tt.base.RoundTrip(r)
				})
			}
			if cred == nil {
				cred = bearerCred
			}
			clk := testkit.NewClock(time.Unix(1e9, 0))
			logger := slog.New(slog.DiscardHandler)
			x := &Exchanger{Peer: "authzen: PDP", Base: base, Logger: logger, Observe: quietObserver{},
				Retry:   RetryPolicy{Logger: logger, Retries: new(atomic.Uint64)},
				Breaker: NewBreaker(1, time.Second, clk.Now, nil)}
			_, probe := x.Breaker.allow()
			x.Breaker.done(probe, outcomeFailure)
			clk.Advance(time.Second)
			require.Equal(t, BreakerHalfOpen, x.Breaker.Current())

			data, err := x.Post(ctx, cred, "https://pdp.example/decide", []byte(`{}`), nil, tt.own, nil)
			assert.Equal(t, tt.want, x.Breaker.Current())
			if tt.name == "200" {
				require.NoError(t, err)
				assert.Equal(t, `{}`, string(data))
				return
			}
			require.Error(t, err)
			assert.Nil(t, data)
			assert.True(t, strings.HasPrefix(err.Error(), "authzen: "), "the client that spoke: %v", err)
			for _, e := range tt.isErr {
				require.ErrorIs(t, err, e)
			}
		})
	}
}

// deadlineIn returns a context that ends d from now.
func deadlineIn(d time.Duration) func(t *testing.T) context.Context {
	return func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		t.Cleanup(cancel)
		return ctx
	}
}

// TestOpenBreakerSendsNothing: an open breaker refuses a request at once,
// with the client's own text for ErrCircuitOpen.
func TestOpenBreakerSendsNothing(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	logger := slog.New(slog.DiscardHandler)
	x := &Exchanger{Peer: "pep: gateway", Logger: logger, Observe: quietObserver{},
		Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent.Add(1)
			return answer(503, `{}`)(r)
		}),
		Retry:   RetryPolicy{Logger: logger, Retries: new(atomic.Uint64)},
		Breaker: NewBreaker(1, time.Hour, time.Now, nil)}
	_, err := x.Post(t.Context(), bearerCred, "https://gw.example/decide", nil, nil, true, nil)
	require.ErrorIs(t, err, ErrUnavailable)
	_, err = x.Post(t.Context(), bearerCred, "https://gw.example/decide", nil, nil, true, nil)
	require.ErrorIs(t, err, ErrCircuitOpen)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Equal(t, "pep: circuit breaker open", err.Error())
	assert.Equal(t, int32(1), sent.Load())
	assert.Equal(t, uint64(1), x.Sent.Load())
}

// TestClosedExchangerSendsNothing: after Close, Post and Fetch fail with
// ErrClosed; the idle connections of a base the Exchanger owns are closed,
// those of a caller's base are not.
func TestClosedExchangerSendsNothing(t *testing.T) {
	t.Parallel()
	for _, owns := range []bool{true, false} {
		base := &idleCounter{RoundTripper: answer(200, `{}`)}
		logger := slog.New(slog.DiscardHandler)
		x := &Exchanger{Peer: "authzen: PDP", Base: base, OwnsBase: owns, Logger: logger, Observe: quietObserver{},
			Retry: RetryPolicy{Logger: logger, Retries: new(atomic.Uint64)}}
		req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, "https://pdp.example/.well-known/x", nil))(t)
		resp := testkit.Must(x.Fetch(req))(t) // under way when Close is called
		assert.False(t, x.Closed())
		x.Close()
		assert.True(t, x.Closed())
		assert.Equal(t, owns, base.closed.Load() == 1, "Close closes the idle connections of its own base only")
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, owns, base.closed.Load() == 2, "and again when the last request ends")

		_, err := x.Post(t.Context(), bearerCred, "https://pdp.example/decide", nil, nil, true, nil)
		require.ErrorIs(t, err, ErrClosed)
		assert.Equal(t, "authzen: the client is closed; calls after Close fail, make a new client with New", err.Error())
		_, err = x.Fetch(req)
		require.ErrorIs(t, err, ErrClosed)
		assert.Zero(t, x.Sent.Load())
	}
}

// idleCounter counts CloseIdleConnections.
type idleCounter struct {
	http.RoundTripper
	closed atomic.Int32
}

func (c *idleCounter) CloseIdleConnections() { c.closed.Add(1) }

// TestBreakerCountsARequestOnce: a request counts against the breaker once,
// after its retries: three failed attempts are one failure.
func TestBreakerCountsARequestOnce(t *testing.T) {
	t.Parallel()
	rt := &attempts{script: []attempt{{status: 503}}}
	logger := slog.New(slog.DiscardHandler)
	x := &Exchanger{Peer: "pep: gateway", Base: rt, Logger: logger, Observe: quietObserver{},
		Retry:   RetryPolicy{Max: 2, MinWait: time.Millisecond, MaxWait: time.Millisecond, Logger: logger, Retries: new(atomic.Uint64)},
		Breaker: NewBreaker(2, time.Hour, time.Now, nil)}
	_, err := x.Post(t.Context(), bearerCred, "https://gw.example/decide", []byte(`{}`), nil, true, nil)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Len(t, rt.bodies, 3)
	assert.Equal(t, uint64(3), x.Sent.Load())
	assert.Equal(t, BreakerClosed, x.Breaker.Current(), "three failed attempts are one failed request")
	_, _ = x.Post(t.Context(), bearerCred, "https://gw.example/decide", []byte(`{}`), nil, true, nil)
	assert.Equal(t, BreakerOpen, x.Breaker.Current())
}
