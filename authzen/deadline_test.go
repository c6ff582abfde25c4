package authzen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/pep"
)

// unfired is a context whose deadline a test moves into the past without
// its timer firing: Done never closes and Err stays nil. It is what a call
// sees when a frozen process (SIGSTOP, a paused VM) resumes, before the
// runtime runs its timers. A client whose WithTimeout is longer than the
// time left keeps reading this deadline.
type unfired struct {
	context.Context
	deadline atomic.Pointer[time.Time]
}

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

// hookedReference starts the reference server with the Todo fixture behind
// a handler that runs hook before each POST (an evaluation or a search)
// is answered.
func hookedReference(t *testing.T, hook func()) (url, token string) {
	t.Helper()
	front := httptest.NewUnstartedServer(nil)
	srv, err := mockserver.New(mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
		mockserver.WithIssuer("http://"+front.Listener.Addr().String()))
	require.NoError(t, err)
	front.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			hook()
		}
		srv.ServeHTTP(w, r)
	})
	front.Start()
	t.Cleanup(front.Close)
	token, err = srv.IssueToken("todo", "service-account-todo-api")
	require.NoError(t, err)
	return front.URL + "/realms/todo", token
}

// TestPDPAnswerPastTheDeadlineIsNotUsed: the PDP's answer is read after
// the call's deadline passed, its context's timer not yet fired (the
// process was frozen while the PDP answered). Evaluate and Evaluations
// deny with the Cause of a passed deadline (ErrUnavailable,
// context.DeadlineExceeded) rather than the PDP's permit, and a search
// fails with it, returning nothing; a caller's own deadline does not
// count against the breaker.
func TestPDPAnswerPastTheDeadlineIsNotUsed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// call makes the call and says whether it permitted anything, and
		// why it failed closed.
		call func(ctx context.Context, c *authzen.Client) (permitted bool, cause error)
	}{
		{"Evaluate", func(ctx context.Context, c *authzen.Client) (bool, error) {
			d, err := c.Evaluate(ctx, todoRead)
			require.NoError(t, err)
			return d.Allowed(), d.Cause
		}},
		{"Evaluations", func(ctx context.Context, c *authzen.Client) (bool, error) {
			ds, err := c.Evaluations(ctx, authzen.Request{}, []authzen.Request{todoRead, todoRead})
			require.NoError(t, err)
			require.Len(t, ds, 2)
			require.Equal(t, ds[0], ds[1])
			return ds[0].Allowed(), ds[0].Cause
		}},
		{"SearchAction", func(ctx context.Context, c *authzen.Client) (bool, error) {
			actions, err := c.SearchAction(ctx, authzen.Request{Subject: todoRead.Subject, Resource: todoRead.Resource})
			return len(actions) > 0, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ctx atomic.Pointer[unfired]
			url, token := hookedReference(t, func() {
				if c := ctx.Load(); c != nil {
					c.pass() // the call's time runs out while the PDP answers
				}
			})
			c, err := authzen.New(url, authzen.WithTimeout(time.Hour), authzen.WithRetry(0, 0, 0),
				authzen.WithBreaker(1, time.Hour), authzen.WithCache(0, 0, 0))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			c.SetToken(token)
			require.NoError(t, c.Discover(t.Context()))

			permitted, cause := tc.call(t.Context(), c)
			require.NoError(t, cause)
			require.True(t, permitted, "the PDP permits in time")

			ctx.Store(newUnfired(time.Minute))
			permitted, cause = tc.call(ctx.Load(), c)
			assert.False(t, permitted, "the PDP's answer was used past the call's deadline")
			require.ErrorIs(t, cause, authzen.ErrUnavailable)
			require.ErrorIs(t, cause, context.DeadlineExceeded)
			assert.Equal(t, authzen.BreakerState(pep.BreakerClosed), c.Stats().Breaker, "a caller's own deadline counted against the breaker")
		})
	}
}
