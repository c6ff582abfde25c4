package core

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/telemetry"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// roundTripFunc is a RoundTripper in a function: the server of a Core
// under test, in the process.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answer200 is a 200 answer to r with body.
func answer200(r *http.Request, body string) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}
}

// testScope is a client's instrumentation scope, as pep's.
var testScope = telemetry.Scope{
	Name: "github.com/orgauthz/orgauthz/internal/core", Prefix: "test.", Items: "pairs",
	Outcomes: [4]string{"grant", "deny", "error", "fail_closed"},
}

// newCore returns a Core of pep's with the Bearer token "tok", no retries,
// a breaker that opens on the first failure, a minute's timeout (a hang
// guard: no test waits for it), the server rt and what edit changes in the
// settings.
func newCore(t *testing.T, rt http.RoundTripper, edit func(*Settings)) *Core {
	t.Helper()
	s := Defaults(10)
	s.HTTPClient = &http.Client{Transport: rt}
	s.RetryMax = 0
	s.Timeout = time.Minute
	s.BreakerFailures, s.BreakerCoolDown = 1, time.Hour
	if edit != nil {
		edit(&s)
	}
	require.NoError(t, s.Validate("pep"))
	c := new(Core)
	require.NoError(t, c.Init(s, Identity{Peer: "pep: gateway", URL: "https://gw.example", Scope: testScope}))
	t.Cleanup(c.Close)
	c.SetBearer("tok")
	return c
}

// TestOnlyTheClientsTimeoutIsItsOwn: a call's deadline is the client's own
// (Own) when the client's timeout ends it first: the caller has no
// deadline, or a later one. Only then does an answer that comes too late
// say the server is slow and count against the breaker; a caller's
// earlier deadline says nothing about the server.
func TestOnlyTheClientsTimeoutIsItsOwn(t *testing.T) {
	t.Parallel()
	// short is a client timeout the test waits for; long enough that a
	// loaded machine still sends the request before it passes (a request
	// not sent says nothing about the server).
	const short = time.Second
	tests := []struct {
		name string
		// timeout is the client's (WithTimeout); caller is the caller's
		// own deadline, 0 for none.
		timeout, caller time.Duration
		wantOwn         bool
		wantBreaker     transport.BreakerState
	}{
		{"the caller has no deadline", short, 0, true, transport.BreakerOpen},
		{"the caller's deadline is later than the timeout", short, time.Hour, true, transport.BreakerOpen},
		{"the caller's deadline is earlier than the timeout", time.Hour, time.Minute, false, transport.BreakerClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The caller's deadline passes while the server answers, its
			// timer unfired (as in a frozen process), so that the test waits
			// for it on no clock.
			ctx := t.Context()
			var caller *frozentest.Unfired
			if tt.caller > 0 {
				caller = frozentest.NewUnfired(tt.caller)
				ctx = caller
			}
			// A server that answers only once the call's time is up.
			slow := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if caller != nil && tt.caller < tt.timeout {
					caller.Pass()
				} else {
					<-r.Context().Done()
				}
				return answer200(r, `{}`), nil
			})
			c := newCore(t, slow, func(s *Settings) { s.Timeout = tt.timeout })
			var cl Call
			require.NoError(t, c.Own(&cl, true))
			err := c.Exchange(ctx, &cl, func(ctx context.Context, post Poster) error {
				_, err := post("https://gw.example/decide", []byte(`{}`), nil)
				return err
			})
			require.ErrorIs(t, err, transport.ErrUnavailable)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, tt.wantOwn, cl.Own)
			assert.Equal(t, tt.wantBreaker, c.x.Breaker.Current())
		})
	}
}

// endHook is the client's Observer, with a hook run when a request ends.
type endHook struct {
	transport.Observer
	onEnd func()
}

func (e endHook) EndRequest(ctx context.Context, span trace.Span, start time.Time, status, retries int, err error) {
	e.onEnd()
	e.Observer.EndRequest(ctx, span, start, status, retries, err)
}

// TestAnAnswerNobodyTookPurgesItsToken: the caller whose request it was
// leaves at the hand-over, once the answer is read but before it takes it
// (its context ends as the request's span does). The caller that shared
// the request is served the answer, and the caller that was to store it
// drops the token's older decisions, which the answer may contradict.
func TestAnAnswerNobodyTookPurgesItsToken(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan struct{}), make(chan struct{})
	server := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		close(arrived)
		<-release
		return answer200(r, `{"decision":"DENY"}`), nil
	})
	joins := make(chan struct{}, 2)
	c := newCore(t, server, func(s *Settings) { s.FlightWait = func() { joins <- struct{}{} } })
	leaderCtx, cancelLeader := context.WithCancel(t.Context())
	defer cancelLeader()
	c.x.Observe = endHook{Observer: c.x.Observe, onEnd: cancelLeader}
	id := transport.Ident{Scheme: transport.SchemeBearer, Token: "tok"}
	older := c.cache.writer(id) // a GRANT cached before the request
	older.Add("orders#read", true)
	older.Close()

	send := func(ctx context.Context) ([]byte, *Writer, error) {
		var cl Call
		require.NoError(t, c.Own(&cl, false))
		cred, err := c.Credential(&cl)
		require.NoError(t, err)
		ctx, cancel := c.Bound(ctx, &cl)
		defer cancel()
		data, _, w, err := c.Send(ctx, &cl, cred, "https://gw.example/decide", []byte(`{}`), nil)
		return data, w, err
	}
	leaderErr := make(chan error)
	go func() {
		_, w, err := send(leaderCtx)
		assert.Nil(t, w, "a caller that left got the writer")
		leaderErr <- err
	}()
	<-joins
	<-arrived
	type shared struct {
		data []byte
		w    *Writer
		err  error
	}
	waiter := make(chan shared)
	go func() {
		data, w, err := send(t.Context())
		waiter <- shared{data, w, err}
	}()
	<-joins // the waiter waits on the leader's request
	close(release)

	err := <-leaderErr
	require.ErrorIs(t, err, transport.ErrUnavailable)
	require.ErrorIs(t, err, context.Canceled)
	got := <-waiter
	require.NoError(t, got.err)
	assert.JSONEq(t, `{"decision":"DENY"}`, string(got.data), "the sharer is served the answer its leader left")
	assert.Nil(t, got.w, "a caller that shared got a writer")
	_, cached := c.cache.lru.Get(id, "orders#read")
	assert.False(t, cached, "the older GRANT outlived the answer nobody stored")
	assert.Equal(t, uint64(1), c.coalesced.Load())
}
