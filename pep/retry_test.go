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

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		hook         gwHook
		opts         []pep.Option
		wantRequests int
		wantAllowed  bool
		wantStatus   int // of the Cause when not allowed
	}{
		{"503 then success", failFirst(nil, 503), nil, 2, true, 0},
		{"502, 504 then success", failFirst(nil, 502, 504), nil, 3, true, 0},
		{"429 then success", failFirst(http.Header{"Retry-After": {"0"}}, 429), nil, 2, true, 0},
		{"retries run out", failFirst(nil, 503, 503, 503), nil, 3, false, 503},
		{"500 is never retried", failFirst(nil, 500), nil, 1, false, 500},
		{"400 is never retried", failFirst(nil, 400), nil, 1, false, 400},
		{"403 is never retried", failFirst(nil, 403), nil, 1, false, 403},
		{"retrying disabled", failFirst(nil, 503), []pep.Option{noRetry}, 1, false, 503},
		{"more retries allowed", failFirst(nil, 503, 503, 503, 503), []pep.Option{pep.WithRetry(4, time.Millisecond, time.Millisecond)}, 5, true, 0},
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
			g := newGateway(t)
			g.setHook(tt.hook)
			c := g.newClient(t, append([]pep.Option{fastRetry}, tt.opts...)...)
			c.SetToken(aliceToken)
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
				assert.Equal(t, "Bearer "+aliceToken, r.Authorization, "attempt %d", i)
				assert.Equal(t, []string{"orders/read"}, r.Authorize.pairs(), "attempt %d", i)
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
	c.SetToken(aliceToken)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.Equal(t, int64(2), calls.Load())
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
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
	c.SetToken(aliceToken)
	d, err := c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	waited := time.Duration(second.Load() - first.Load())
	assert.GreaterOrEqual(t, waited, time.Second, "the retry came before Retry-After allowed")
}

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
			g := newGateway(t)
			g.setHook(failFirst(tt.header, 503, 503, 503))
			c := g.newClient(t, tt.opts...)
			c.SetToken(aliceToken)
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
