package middleware_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
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

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A user callback the middleware calls (the resource, subject or target
// function, the Checker, the Evaluator) that panics costs only its
// request, which gets the denied answer (403 in the service's error
// shape) with the panic logged at Error, never the token: the request
// fails closed with an answer whatever the router does with panics (gin
// and echo recover none without their own Recovery middleware).
func TestPanickingUserCallbackIsDenied(t *testing.T) {
	t.Parallel()
	grant := &fakeChecker{res: result(pep.Grant, nil)}
	buggyResource := func(*http.Request) (string, []string) { panic("a user's resource function with a bug") }
	buggySubject := func(*http.Request) (authzen.Subject, error) { panic("a user's subject function with a bug") }
	subject := func(*http.Request) (authzen.Subject, error) { return authzen.Subject{Type: "user", ID: "ann"}, nil }
	buggyTarget := func(*http.Request) (authzen.Action, authzen.Resource) { panic("a user's target function with a bug") }
	target := func(*http.Request) (authzen.Action, authzen.Resource) {
		return authzen.Action{Name: "read"}, authzen.Resource{Type: "order", ID: "42"}
	}
	tests := []struct {
		name     string
		callback string
		build    func(opts ...middleware.Option) middleware.Middleware
	}{
		{"the resource function", "the resource function", func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireFunc(grant, buggyResource, opts...)
		}},
		{"the Checker", "the Checker", func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireFunc(panicking{}, middleware.Static("orders", "read"), opts...)
		}},
		{"the subject function", "the subject function", func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireAuthZEN(panicking{}, buggySubject, target, opts...)
		}},
		{"the target function", "the target function", func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireAuthZEN(panicking{}, subject, buggyTarget, opts...)
		}},
		{"the Evaluator", "the Evaluator", func(opts ...middleware.Option) middleware.Middleware {
			return middleware.RequireAuthZEN(panicking{}, subject, target, opts...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &syncBuffer{}
			var ran bool
			h := tt.build(middleware.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
			var got answer
			require.NotPanics(t, func() { got = serve(t, h, http.MethodGet, "Bearer secret-token") })
			assert.Equal(t, http.StatusForbidden, got.status)
			errorBody(t, got.body)
			assert.False(t, ran)
			assert.Contains(t, logs.String(), "level=ERROR")
			assert.Contains(t, logs.String(), tt.callback+" panicked")
			assert.NotContains(t, logs.String(), "secret-token")
		})
	}
}

// Only the user's decision callbacks are recovered: a panic in the
// protected handler is the handler's, and goes on to the server (net/http
// recovers it and drops the connection) as without the middleware.
func TestHandlerPanicIsNotRecovered(t *testing.T) {
	t.Parallel()
	h := middleware.Require(&fakeChecker{res: result(pep.Grant, nil)}, "orders", "read")(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("the handler's own") }))
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/42", nil)
	req.Header.Set("Authorization", "Bearer x")
	require.PanicsWithValue(t, "the handler's own", func() { h.ServeHTTP(httptest.NewRecorder(), req) })
}

// WithLogger needs a logger.
func TestWithLoggerNeedsALogger(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "middleware: WithLogger was given a nil logger", func() {
		middleware.Require(&fakeChecker{}, "orders", "read").With(middleware.WithLogger(nil))
	})
}
