package pep_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// fastRetry keeps retry tests quick: 2 retries, 1-2 ms apart.
var fastRetry = pep.WithRetry(2, time.Millisecond, 2*time.Millisecond)

// bodyHook answers every request with 200 and body.
func bodyHook(body string) gwHook {
	return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
		return true
	}
}

// mockGateway returns a client whose transport is an httpmock transport
// answering the authorize URL with responder.
func mockGateway(t *testing.T, responder httpmock.Responder, opts ...pep.Option) *pep.Client {
	t.Helper()
	mock := httpmock.NewMockTransport()
	mock.RegisterResponder(http.MethodPost,
		"https://gateway.test/realms/acme/authorization-decision-provider/authorize", responder)
	all := append([]pep.Option{pep.WithHTTPClient(&http.Client{Transport: mock})}, opts...)
	c, err := pep.New("https://gateway.test", testRealm, testClient, all...)
	require.NoError(t, err)
	return c
}

// wantUnavailable checks the Cause of a transport failure or timeout.
func wantUnavailable(also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		require.ErrorIs(t, cause, pep.ErrUnavailable)
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
		var re *pep.ResponseError
		assert.False(t, errors.As(cause, &re), "a transport failure is not a gateway answer")
	}
}

// wantAnswer checks the Cause of an unusable gateway answer.
func wantAnswer(status int, also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		var re *pep.ResponseError
		require.ErrorAs(t, cause, &re)
		assert.Equal(t, status, re.StatusCode)
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
	}
}

// TestFailClosed names every path of fail-closed rule 2 of the README (and
// 3xx, 5): each ends in DENY with a Cause and a nil error, caches nothing,
// and the next call asks the gateway again. The gateway is the reference
// server (alice may read orders) wherever it can make the fault: slow
// decisions, a 503 for each, a 400 for an unknown client, a 404 for a path
// it does not serve; a hook in front of it makes the others.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	const asked = `{"resource":"orders","scope":"read","status":"GRANT"}`
	tests := []struct {
		name string
		// setup returns a client holding a token.
		setup        func(t *testing.T) *pep.Client
		wantRequests uint64 // gateway requests made by one call
		wantCause    func(*testing.T, error)
	}{
		{
			name: "gateway unreachable",
			setup: func(t *testing.T) *pep.Client {
				closed := httptest.NewServer(http.NotFoundHandler())
				closed.Close()
				c, err := pep.New(closed.URL, testRealm, testClient, fastRetry)
				require.NoError(t, err)
				c.SetToken("opaque-token")
				return c
			},
			wantRequests: 3, // connection errors are retried
			wantCause:    wantUnavailable(),
		},
		{
			name: "connection reset",
			setup: func(t *testing.T) *pep.Client {
				c := mockGateway(t, httpmock.NewErrorResponder(errors.New("connection reset by peer")), fastRetry)
				c.SetToken("opaque-token")
				return c
			},
			wantRequests: 3,
			wantCause:    wantUnavailable(),
		},
		{
			name:         "timeout",
			setup:        referenceConfigured(slowDecisions, pep.WithTimeout(20*time.Millisecond), fastRetry),
			wantRequests: 1, // a timeout is not retried
			wantCause:    wantUnavailable(context.DeadlineExceeded),
		},
		{
			name:         "500 is not retried",
			setup:        referenceWith(statusHook(http.StatusInternalServerError), fastRetry),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusInternalServerError, pep.ErrUnavailable),
		},
		{
			name:         "502 after retries",
			setup:        referenceWith(statusHook(http.StatusBadGateway), fastRetry),
			wantRequests: 3,
			wantCause:    wantAnswer(http.StatusBadGateway, pep.ErrUnavailable),
		},
		{
			name:         "503 after retries",
			setup:        referenceConfigured(everyDecisionFails, fastRetry),
			wantRequests: 3,
			wantCause:    wantAnswer(http.StatusServiceUnavailable, pep.ErrUnavailable),
		},
		{
			name:         "504 after retries",
			setup:        referenceWith(statusHook(http.StatusGatewayTimeout), fastRetry),
			wantRequests: 3,
			wantCause:    wantAnswer(http.StatusGatewayTimeout, pep.ErrUnavailable),
		},
		{
			name:         "429 after retries",
			setup:        referenceWith(statusHook(http.StatusTooManyRequests), fastRetry),
			wantRequests: 3,
			wantCause:    wantAnswer(http.StatusTooManyRequests),
		},
		{
			name: "400 for an unknown client",
			setup: func(t *testing.T) *pep.Client {
				g := startReference(t)
				c := g.newClientOf(t, "no-such-client", fastRetry)
				c.SetToken(g.token(t, "alice"))
				return c
			},
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusBadRequest),
		},
		{
			name:         "403",
			setup:        referenceWith(statusHook(http.StatusForbidden), fastRetry),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusForbidden),
		},
		{
			name: "404 for a path the gateway does not serve",
			setup: func(t *testing.T) *pep.Client {
				g := startReference(t)
				c, err := pep.New(g.URL+"/no-such-prefix", testRealm, testClient, pep.WithHTTPClient(g.Client()), fastRetry)
				require.NoError(t, err)
				c.SetToken(g.token(t, "alice"))
				return c
			},
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusNotFound),
		},
		{
			name:         "unparseable body",
			setup:        referenceWith(bodyHook(`<html>maintenance</html>`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "trailing garbage after the JSON",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[` + asked + `]} {}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "wrong JSON types",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":{"orders":"read"}}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "unknown pair status",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"ALLOW"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "status in the wrong case",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"grant"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		// The one strict JSON rule (internal/strictjson, README rule 1).
		{
			name:         "a status beside its long-s variant",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","ſtatus":"DENY"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "a scope named in another case only",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","Scope":"read","status":"GRANT"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "two unread members differing only in case",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","reason":"role viewer","Reason":"none"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "a member twice inside an unread member",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[` + asked + `],"explain":{"orders":"DENY","orders":"GRANT"}}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "unknown top-level status",
			setup:        referenceWith(bodyHook(`{"status":"OK","permissions":[` + asked + `]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "missing pair",
			setup:        referenceWith(bodyHook(`{"status":"GRANT","permissions":[]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name: "only pairs that were not asked for",
			setup: referenceWith(bodyHook(`{"status":"GRANT","permissions":[` +
				`{"resource":"orders","scope":"write","status":"GRANT"},` +
				`{"resource":"order","scope":"read","status":"GRANT"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name: "conflicting duplicate pair",
			setup: referenceWith(bodyHook(`{"status":"DENY","permissions":[` + asked +
				`,{"resource":"orders","scope":"read","status":"DENY"}]}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name: "body over the 1 MiB limit",
			// Valid JSON granting the pair, made long by whitespace.
			setup: referenceWith(bodyHook(`{"status":"GRANT","permissions":[` + asked + `]` +
				strings.Repeat(" ", 1<<20) + `}`)),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusOK, pep.ErrMalformedResponse),
		},
		{
			name:         "redirect (302)",
			setup:        redirectingGateway(http.StatusFound),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusFound),
		},
		{
			name:         "redirect (307)",
			setup:        redirectingGateway(http.StatusTemporaryRedirect),
			wantRequests: 1,
			wantCause:    wantAnswer(http.StatusTemporaryRedirect),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.setup(t)

			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err, "failing closed is not an error")
			assert.False(t, d.Allowed())
			assert.Equal(t, pep.Deny, d.Status)
			assert.False(t, d.Cached)
			require.Error(t, d.Cause)
			tt.wantCause(t, d.Cause)

			s := c.Stats()
			assert.Equal(t, tt.wantRequests, s.GatewayRequests)
			assert.Equal(t, 0, s.CacheEntries, "a fail-closed denial is never cached")
			assert.Equal(t, uint64(1), s.FailClosed)

			// The next call asks the gateway again and fails closed again.
			d, err = c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			assert.False(t, d.Allowed())
			assert.False(t, d.Cached)
			assert.Equal(t, 2*tt.wantRequests, c.Stats().GatewayRequests)

			// The same holds for CheckMany.
			r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read"}}})
			require.NoError(t, err)
			assert.False(t, r.Allowed())
			assert.Equal(t, pep.Deny, r.Status)
			require.Len(t, r.Decisions, 1)
			tt.wantCause(t, r.Decisions[0].Cause)
		})
	}
}

// slowDecisions is the server configuration that holds every decision call
// for 5 s, or until the client gives up.
const slowDecisions = `{"decisionLatencyMs": 5000}`

// referenceWith returns a setup: a client of alice's on the reference
// server, with hook answering in the server's place.
func referenceWith(hook gwHook, opts ...pep.Option) func(t *testing.T) *pep.Client {
	return func(t *testing.T) *pep.Client {
		g := startReference(t)
		g.setHook(hook)
		c := g.newClient(t, opts...)
		c.SetToken(g.token(t, "alice"))
		return c
	}
}

// referenceConfigured returns a setup: a client of alice's on the reference
// server, configured with config.
func referenceConfigured(config string, opts ...pep.Option) func(t *testing.T) *pep.Client {
	return func(t *testing.T) *pep.Client {
		g := startReference(t)
		g.configure(t, config)
		c := g.newClient(t, opts...)
		c.SetToken(g.token(t, "alice"))
		return c
	}
}

// redirectingGateway answers with a redirect to a server that would grant
// everything; the test fails if that server is ever asked. The reference
// server never redirects: the hook does.
func redirectingGateway(status int) func(t *testing.T) *pep.Client {
	return func(t *testing.T) *pep.Client {
		var followed atomic.Int64
		permissive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			followed.Add(1)
			_, _ = w.Write([]byte(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`))
		}))
		t.Cleanup(permissive.Close)
		t.Cleanup(func() { assert.Zero(t, followed.Load(), "the redirect was followed") })
		return referenceWith(func(w http.ResponseWriter, r *http.Request, _ int) bool {
			http.Redirect(w, r, permissive.URL+r.URL.Path, status)
			return true
		})(t)
	}
}

// TestCallerDeadlineFailsClosed: the server holds the decision past the
// caller's deadline.
func TestCallerDeadlineFailsClosed(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	g.configure(t, slowDecisions)
	c := g.newClient(t) // default 2 s timeout: the caller's deadline is earlier
	c.SetToken(g.token(t, "alice"))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	d, err := c.Check(ctx, "orders", "read")
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	require.ErrorIs(t, d.Cause, context.DeadlineExceeded)
}

func TestCancelledContextFailsClosedWithoutRequest(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t)
	c.SetToken(g.token(t, "alice"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d, err := c.Check(ctx, "orders", "read")
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	require.ErrorIs(t, d.Cause, context.Canceled)
	assert.Zero(t, c.Stats().GatewayRequests)
	assert.Equal(t, 0, g.count())
}
