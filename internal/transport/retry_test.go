package transport

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// attempt is one scripted outcome of an attempt: a status (with headers)
// or an error.
type attempt struct {
	status int
	header http.Header
	err    error
}

// attempts answers the requests it receives with its script in turn, the
// last one again when the script runs out, and records each body.
type attempts struct {
	mu     sync.Mutex
	script []attempt
	bodies []string
	ctxs   []context.Context
}

func (a *attempts) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bodies = append(a.bodies, string(body))
	a.ctxs = append(a.ctxs, r.Context())
	next := a.script[min(len(a.bodies), len(a.script))-1]
	if next.err != nil {
		return nil, next.err
	}
	h := next.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: next.status, Header: h, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

// retryPolicy is a policy of max retries 1-2 ms apart.
func retryPolicy(max int) *RetryPolicy {
	return &RetryPolicy{Max: max, MinWait: time.Millisecond, MaxWait: 2 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler), Retries: new(atomic.Uint64)}
}

// TestRetrier: which outcomes are retried (connection errors, 429, 502,
// 503, 504), which never are (500, 4xx, a certificate the client refuses,
// a credential that cannot be attached), and how often (WithRetry's max).
// Every attempt carries the whole body; the last attempt's answer or error
// is returned.
func TestRetrier(t *testing.T) {
	t.Parallel()
	ok := attempt{status: 200}
	status := func(s int) attempt { return attempt{status: s} }
	tests := []struct {
		name       string
		max        int
		script     []attempt
		wantSent   int
		wantStatus int // of the answer returned; 0 for an error
	}{
		{"503 then success", 2, []attempt{status(503), ok}, 2, 200},
		{"502, 504 then success", 2, []attempt{status(502), status(504), ok}, 3, 200},
		{"429 then success", 2, []attempt{{status: 429, header: http.Header{"Retry-After": {"0"}}}, ok}, 2, 200},
		{"a connection error then success", 2, []attempt{{err: syscall.ECONNRESET}, ok}, 2, 200},
		{"retries run out", 2, []attempt{status(503)}, 3, 503},
		{"more retries allowed", 4, []attempt{status(503), status(503), status(503), status(503), ok}, 5, 200},
		{"retrying disabled", 0, []attempt{status(503)}, 1, 503},
		{"500 is never retried", 2, []attempt{status(500), ok}, 1, 500},
		{"400 is never retried", 2, []attempt{status(400), ok}, 1, 400},
		{"401 is never retried", 2, []attempt{status(401), ok}, 1, 401},
		{"403 is never retried", 2, []attempt{status(403), ok}, 1, 403},
		{"a refused certificate is never retried", 2, []attempt{{err: x509.UnknownAuthorityError{}}, ok}, 1, 0},
		{"a credential error is never retried", 2, []attempt{{err: &CredentialError{err: errors.New("no key")}}, ok}, 1, 0},
		{"Retry-After beyond maxWait ends the retries", 2, []attempt{{status: 503, header: http.Header{"Retry-After": {"120"}}}, ok}, 1, 503},
		{"a Retry-After date beyond maxWait ends the retries", 2, []attempt{
			{status: 429, header: http.Header{"Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}}, ok,
		}, 1, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := &attempts{script: tt.script}
			p := retryPolicy(tt.max)
			r := &retrier{next: rt, policy: p}
			resp, err := r.RoundTrip(newTestPost(t, t.Context(), `{"pairs":1}`))
			if tt.wantStatus == 0 {
				require.Error(t, err)
				assert.Nil(t, resp)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantStatus, resp.StatusCode)
				require.NoError(t, resp.Body.Close())
			}
			require.Len(t, rt.bodies, tt.wantSent)
			for i, b := range rt.bodies {
				assert.Equal(t, `{"pairs":1}`, b, "attempt %d carries the whole body", i)
			}
			assert.Equal(t, uint64(tt.wantSent-1), p.Retries.Load())
			assert.Equal(t, tt.wantSent-1, r.retried)
		})
	}
}

// newTestPost returns a replayable POST of body under ctx.
func newTestPost(t *testing.T, ctx context.Context, body string) *http.Request {
	t.Helper()
	return testkit.Must(http.NewRequestWithContext(ctx, http.MethodPost, "https://gw.example/decide", strings.NewReader(body)))(t)
}

// TestRetrierKeepsToTheDeadline: no retry starts whose wait would pass the
// call's deadline; the last answer is returned at once instead of a
// timeout. A call cancelled while it waits returns its context's error.
func TestRetrierKeepsToTheDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy RetryPolicy
		header http.Header
	}{
		{"backoff longer than the deadline", RetryPolicy{Max: 3, MinWait: time.Minute, MaxWait: 2 * time.Minute}, nil},
		{"Retry-After longer than the deadline", RetryPolicy{Max: 3, MinWait: time.Millisecond, MaxWait: 5 * time.Minute},
			http.Header{"Retry-After": {"120"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			rt := &attempts{script: []attempt{{status: 503, header: tt.header}}}
			p := tt.policy
			p.Logger, p.Retries = slog.New(slog.DiscardHandler), new(atomic.Uint64)
			resp := testkit.Must((&retrier{next: rt, policy: &p}).RoundTrip(newTestPost(t, ctx, `{}`)))(t)
			assert.Equal(t, 503, resp.StatusCode)
			assert.Len(t, rt.bodies, 1)
			assert.NoError(t, ctx.Err(), "returned before the deadline")
		})
	}

	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		rt := &attempts{script: []attempt{{status: 503}}}
		// The caller hangs up once the retrier says it waits.
		logger := slog.New(onMessage{msg: "pep: retrying", do: cancel})
		p := RetryPolicy{Max: 2, MinWait: time.Hour, MaxWait: time.Hour, Logger: logger, Retries: new(atomic.Uint64)}
		resp, err := (&retrier{next: rt, policy: &p}).RoundTrip(newTestPost(t, ctx, `{}`))
		assert.Nil(t, resp)
		require.ErrorIs(t, err, context.Canceled)
		assert.Len(t, rt.bodies, 1)
	})
}

// onMessage is a slog.Handler that runs do when a record's message is msg.
type onMessage struct {
	msg string
	do  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h onMessage) WithGroup(string) slog.Handler            { return h }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.do()
	}
	return nil
}

// TestAttemptTimeout: WithHTTPClient's Timeout bounds each attempt, not
// the call: every attempt has a deadline of its own.
func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	rt := &attempts{script: []attempt{{status: 503}, {status: 200}}}
	p := retryPolicy(2)
	p.AttemptTimeout = time.Minute
	resp := testkit.Must((&retrier{next: rt, policy: p}).RoundTrip(newTestPost(t, t.Context(), `{}`)))(t)
	require.NoError(t, resp.Body.Close())
	require.Len(t, rt.ctxs, 2)
	d0, ok0 := rt.ctxs[0].Deadline()
	d1, ok1 := rt.ctxs[1].Deadline()
	require.True(t, ok0)
	require.True(t, ok1)
	assert.True(t, d1.After(d0), "the retry has a deadline of its own")
	assert.Error(t, rt.ctxs[1].Err(), "an attempt's context ends when its body is closed")
}

// TestBackoff: exponential from minWait, capped at maxWait, with jitter in
// [d/2, d]; a Retry-After of a 429 or 503 is waited out exactly when it fits
// in maxWait, and ends the retries when it does not.
func TestBackoff(t *testing.T) {
	t.Parallel()
	p := &RetryPolicy{MinWait: 10 * time.Millisecond, MaxWait: 80 * time.Millisecond}
	for attempt, d := range []time.Duration{10, 20, 40, 80, 80, 80} {
		d *= time.Millisecond
		for range 50 {
			wait, ok := p.backoff(attempt, nil)
			require.True(t, ok)
			require.GreaterOrEqual(t, wait, d/2, "attempt %d", attempt)
			require.LessOrEqual(t, wait, d, "attempt %d", attempt)
		}
	}
	wait, ok := p.backoff(100, nil) // no overflow far out
	assert.True(t, ok)
	assert.LessOrEqual(t, wait, p.MaxWait)

	retryAfter := func(status int, v string) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {v}}}
	}
	wait, ok = p.backoff(0, retryAfter(503, "0"))
	assert.Equal(t, time.Duration(0), wait)
	assert.True(t, ok)
	p.MaxWait = 2 * time.Second
	wait, ok = p.backoff(0, retryAfter(429, "1"))
	assert.Equal(t, time.Second, wait, "Retry-After is waited out exactly")
	assert.True(t, ok)
	_, ok = p.backoff(0, retryAfter(503, "3"))
	assert.False(t, ok, "a Retry-After longer than maxWait ends the retries")
	wait, ok = p.backoff(0, retryAfter(502, "1"))
	assert.True(t, ok)
	assert.LessOrEqual(t, wait, p.MinWait, "Retry-After counts on 429 and 503 only")
}
