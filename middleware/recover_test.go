package middleware_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// panicking is a user's Checker and Evaluator with a bug.
type panicking struct{}

func (panicking) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	panic("a user's Checker with a bug")
}

func (panicking) Evaluate(context.Context, authzen.Request, ...authzen.CallOption) (authzen.Decision, error) {
	panic("a user's Evaluator with a bug")
}

// A user callback the middleware calls (the resource, subject or target
// function, the Checker, the Evaluator) that panics costs only its
// request, which gets the denied answer (403 in the service's error
// shape) with the panic logged at Error, never the token: the request
// fails closed with an answer whatever the router does with panics (gin
// and echo recover none without their own Recovery middleware).
//
// The row TestMiddlewareRecoverDoesNotDependOnTheLogger: nor does the
// answer depend on the user's logger: one slog handler with a bug on its
// Error path, shared by the client (which logs its fail-closed outage at
// Warn and panics there) and the middleware (which logs the recovered
// panic), still gets the request its 403, and nothing leaves the
// middleware. (The middleware's log line used to panic again, outside any
// recover: net/http dropped the connection, and a router without recovery
// ended the process.)
func TestPanickingUserCallbackIsDenied(t *testing.T) {
	t.Parallel()
	buggyLogger := slog.New(testkit.WarnPanics{})
	down, err := hangguard.NewPep("http://127.0.0.1:1", adaptertest.Realm, adaptertest.ClientID,
		pep.WithRetry(0, time.Millisecond, time.Millisecond), pep.WithLogger(buggyLogger))
	require.NoError(t, err)
	t.Cleanup(func() { _ = down.Close() })
	grant := &fakeChecker{grant: true}
	buggyResource := func(*http.Request) (string, []string) { panic("a user's resource function with a bug") }
	buggySubject := func(*http.Request) (authzen.Subject, error) { panic("a user's subject function with a bug") }
	subject := func(*http.Request) (authzen.Subject, error) { return authzen.Subject{Type: "user", ID: "ann"}, nil }
	buggyTarget := func(*http.Request) (authzen.Action, authzen.Resource) { panic("a user's target function with a bug") }
	target := func(*http.Request) (authzen.Action, authzen.Resource) {
		return authzen.Action{Name: "read"}, authzen.Resource{Type: "order", ID: "42"}
	}
	tests := []struct {
		name   string
		logger *slog.Logger // nil: a text logger whose lines the row reads
		build  func(opts ...middleware.Option) middleware.Middleware
	}{
		{"the resource function", nil, func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireFunc(grant, buggyResource, opts...)
		}},
		{"the Checker", nil, func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireFunc(panicking{}, middleware.Static("orders", "read"), opts...)
		}},
		{"the subject function", nil, func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireAuthZEN(panicking{}, buggySubject, target, opts...)
		}},
		{"the target function", nil, func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireAuthZEN(panicking{}, subject, buggyTarget, opts...)
		}},
		{"the Evaluator", nil, func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireAuthZEN(panicking{}, subject, target, opts...)
		}},
		{"TestMiddlewareRecoverDoesNotDependOnTheLogger", buggyLogger, func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireFunc(down, middleware.Static("orders", "read"), opts...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &testkit.SyncBuffer{}
			logger := tt.logger
			if logger == nil {
				logger = slog.New(slog.NewTextHandler(logs, nil))
			}
			var ran bool
			h := tt.build(middleware.WithLogger(logger))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
			var got answer
			require.NotPanics(t, func() { got = serve(t, h, http.MethodGet, "Bearer secret-token") })
			assert.Equal(t, http.StatusForbidden, got.status)
			errorBody(t, got.body)
			assert.False(t, ran)
			if tt.logger == nil {
				assert.Contains(t, logs.String(), "level=ERROR")
				assert.Contains(t, logs.String(), tt.name+" panicked")
				assert.NotContains(t, logs.String(), "secret-token")
			}
		})
	}
}

// Only the user's decision callbacks are recovered: a panic in the
// protected handler is the handler's, and goes on to the server (net/http
// recovers it and drops the connection) as without the middleware.
func TestHandlerPanicIsNotRecovered(t *testing.T) {
	t.Parallel()
	h := middleware.Require(&fakeChecker{grant: true}, "orders", "read")(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("the handler's own") }))
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/42", nil)
	req.Header.Set("Authorization", "Bearer x")
	require.PanicsWithValue(t, "the handler's own", func() { h.ServeHTTP(httptest.NewRecorder(), req) })
}
