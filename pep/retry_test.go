package pep_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// failFirst answers the first len(statuses) requests with those statuses
// (and headers), then lets the gateway answer.
func failFirst(header http.Header, statuses ...int) gwHook {
	return func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n > len(statuses) {
			return false
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		writeError(w, statuses[n-1], "injected")
		return true
	}
}

// TestRetryPolicy: a hook answers the first requests with the statuses the
// reference server cannot give on demand, then hands the rest to it. The
// server's own faults: a 503 for every decision (decisionFailureRate 1) and
// a 400 for an unknown client.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		hook         gwHook
		config       string // the server's configuration
		clientID     string // orders-api when empty
		opts         []pep.Option
		wantRequests int
		wantAllowed  bool
		wantStatus   int // of the Cause when not allowed
	}{
		{name: "503 then success", hook: failFirst(nil, 503), wantRequests: 2, wantAllowed: true},
		{name: "502, 504 then success", hook: failFirst(nil, 502, 504), wantRequests: 3, wantAllowed: true},
		{name: "429 then success", hook: failFirst(http.Header{"Retry-After": {"0"}}, 429), wantRequests: 2, wantAllowed: true},
		{name: "retries run out", config: everyDecisionFails, wantRequests: 3, wantStatus: 503},
		{name: "500 is never retried", hook: failFirst(nil, 500), wantRequests: 1, wantStatus: 500},
		{name: "400 is never retried", clientID: "no-such-client", wantRequests: 1, wantStatus: 400},
		{name: "403 is never retried", hook: failFirst(nil, 403), wantRequests: 1, wantStatus: 403},
		{name: "retrying disabled", config: everyDecisionFails, opts: []pep.Option{noRetry}, wantRequests: 1, wantStatus: 503},
		{
			name: "more retries allowed", hook: failFirst(nil, 503, 503, 503, 503),
			opts:         []pep.Option{pep.WithRetry(4, time.Millisecond, time.Millisecond)},
			wantRequests: 5, wantAllowed: true,
		},
		{
			name:         "Retry-After beyond maxWait is not waited for",
			hook:         failFirst(http.Header{"Retry-After": {"120"}}, 503),
			wantRequests: 1, wantStatus: 503,
		},
		{
			name:         "Retry-After date beyond maxWait is not waited for",
			hook:         failFirst(http.Header{"Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, 429),
			wantRequests: 1, wantStatus: 429,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			if tt.config != "" {
				g.configure(t, tt.config)
			}
			g.setHook(tt.hook)
			clientID := testClient
			if tt.clientID != "" {
				clientID = tt.clientID
			}
			c := g.newClientOf(t, clientID, append([]pep.Option{fastRetry}, tt.opts...)...)
			alice := g.token(t, "alice")
			c.SetToken(alice)
			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			assert.Equal(t, tt.wantAllowed, d.Allowed())
			if !tt.wantAllowed {
				var re *pep.ResponseError
				require.ErrorAs(t, d.Cause, &re)
				assert.Equal(t, tt.wantStatus, re.StatusCode)
			}
			reqs := g.received()
			assert.Len(t, reqs, tt.wantRequests)
			for i, r := range reqs { // every attempt is complete
				assert.Equal(t, "Bearer "+alice, r.Authorization, "attempt %d", i)
				assert.Equal(t, []string{"orders/read"}, r.pairs(), "attempt %d", i)
			}
			s := c.Stats()
			assert.Equal(t, uint64(tt.wantRequests), s.GatewayRequests)
			assert.Equal(t, uint64(tt.wantRequests-1), s.Retries)
		})
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	c := mockGateway(t, func(r *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("connection reset by peer")
		}
		return httpmock.NewStringResponse(200,
			`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`), nil
	}, fastRetry)
	c.SetToken("opaque-token")
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, int64(2), calls.Load())
}

// TestRetryAfterIsHonoured: the hook answers the first request with a 429
// and Retry-After: 1, the server the second.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	var first, second atomic.Int64
	g.setHook(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		now := time.Now().UnixNano()
		if n == 1 {
			first.Store(now)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, "slow down")
			return true
		}
		second.Store(now)
		return false
	})
	c := g.newClient(t, pep.WithRetry(2, time.Millisecond, 2*time.Second))
	c.SetToken(g.token(t, "alice"))
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	waited := time.Duration(second.Load() - first.Load())
	assert.GreaterOrEqual(t, waited, time.Second, "the retry came before Retry-After allowed")
}

// TestNoRetryWhenTheDeadlineCannotFitTheWait: every decision is a 503, the
// server's own; with a Retry-After, which it never sends, the hook's.
func TestNoRetryWhenTheDeadlineCannotFitTheWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		header   http.Header
		opts     []pep.Option
		deadline time.Duration
	}{
		{
			name:     "backoff longer than the caller's deadline",
			opts:     []pep.Option{pep.WithRetry(3, 10*time.Second, 20*time.Second)},
			deadline: 2 * time.Second,
		},
		{
			name:     "backoff longer than WithTimeout",
			opts:     []pep.Option{pep.WithRetry(3, 10*time.Second, 20*time.Second), pep.WithTimeout(time.Second)},
			deadline: time.Hour,
		},
		{
			name:     "Retry-After longer than the deadline",
			header:   http.Header{"Retry-After": {"2"}},
			opts:     []pep.Option{pep.WithRetry(3, time.Millisecond, 5*time.Second)},
			deadline: time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			if tt.header != nil {
				g.setHook(failFirst(tt.header, 503, 503, 503))
			} else {
				g.configure(t, everyDecisionFails)
			}
			c := g.newClient(t, tt.opts...)
			c.SetToken(g.token(t, "alice"))
			ctx, cancel := context.WithTimeout(t.Context(), tt.deadline)
			defer cancel()

			d, err := c.Check(ctx, "orders", "read")
			require.NoError(t, err)
			assert.False(t, d.Allowed())
			// Had the client waited, the deadline would have expired and the
			// Cause would be a timeout; it is the gateway's last answer.
			var re *pep.ResponseError
			require.ErrorAs(t, d.Cause, &re)
			assert.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
			assert.NotErrorIs(t, d.Cause, context.DeadlineExceeded)
			assert.NoError(t, ctx.Err(), "the call returned before the deadline")
			assert.Equal(t, 1, g.count())
			assert.Zero(t, c.Stats().Retries)
		})
	}
}
