package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// fakeChecker answers with a fixed result and error and counts its calls.
type fakeChecker struct {
	res   pep.Result
	err   error
	calls atomic.Int32
	got   []pep.Resource
}

func (f *fakeChecker) CheckMany(_ context.Context, resources []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	f.calls.Add(1)
	f.got = resources
	return f.res, f.err
}

func result(s pep.Status, cause error) pep.Result {
	return pep.Result{Status: s, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: s, Cause: cause}}}
}

// reached is the protected handler: it answers 200 with the decision's status.
var reached = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	res, ok := middleware.DecisionFromContext(r.Context())
	if !ok {
		http.Error(w, "no decision in context", http.StatusTeapot)
		return
	}
	_, _ = io.WriteString(w, "reached "+res.Status.String())
})

type answer struct {
	status    int
	body      string
	challenge string
}

func serve(t *testing.T, h http.Handler, method, auth string) answer {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, "/orders/42", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{status: rec.Code, body: rec.Body.String(), challenge: rec.Header().Get("WWW-Authenticate")}
}

// errorBody decodes the service's error shape and fails on anything else.
func errorBody(t *testing.T, body string) (name, message string) {
	t.Helper()
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), "body %q", body)
	require.NotEmpty(t, e.Message)
	return e.Error, e.Message
}

func TestRequireAnswers(t *testing.T) {
	t.Parallel()
	unauthorized := &pep.ResponseError{StatusCode: http.StatusUnauthorized, ErrorName: "Unauthorized", Message: "token expired"}
	tests := []struct {
		name      string
		auth      string
		res       pep.Result
		err       error
		status    int
		errName   string
		challenge string
		calls     int32
	}{
		{name: "grant runs the handler", auth: "Bearer tok", res: result(pep.Grant, nil), status: 200, calls: 1},
		{name: "lowercase scheme is accepted", auth: "bearer tok", res: result(pep.Grant, nil), status: 200, calls: 1},
		{name: "no token is 401 without a gateway call", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "a Basic credential is no token", auth: "Basic dXNlcjpwdw==", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "an empty Bearer is no token", auth: "Bearer ", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "deny is 403", auth: "Bearer tok", res: result(pep.Deny, nil), status: 403, errName: "Forbidden", calls: 1},
		{name: "a fail-closed deny is 403", auth: "Bearer tok", res: result(pep.Deny, pep.ErrUnavailable), status: 403, errName: "Forbidden", calls: 1},
		{name: "error status is 403", auth: "Bearer tok", res: result(pep.Error, nil), status: 403, errName: "Forbidden", calls: 1},
		{name: "the zero result is 403", auth: "Bearer tok", status: 403, errName: "Forbidden", calls: 1},
		{name: "a refused token is 401 with invalid_token", auth: "Bearer tok", res: result(pep.Deny, nil), err: unauthorized,
			status: 401, errName: "Unauthorized", challenge: `Bearer error="invalid_token"`, calls: 1},
		{name: "a library error is 500", auth: "Bearer tok", err: errors.New("pep: resources must not be empty"), status: 500, errName: "Internal Server Error", calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeChecker{res: tt.res, err: tt.err}
			got := serve(t, middleware.Require(fc, "orders", "read")(reached), http.MethodGet, tt.auth)
			assert.Equal(t, tt.status, got.status, "body %s", got.body)
			assert.Equal(t, tt.calls, fc.calls.Load(), "gateway calls")
			assert.Equal(t, tt.challenge, got.challenge)
			if tt.status == 200 {
				assert.Equal(t, "reached GRANT", got.body)
				assert.Equal(t, []pep.Resource{{Name: "orders", Scopes: []string{"read"}}}, fc.got)
				return
			}
			name, _ := errorBody(t, got.body)
			assert.Equal(t, tt.errName, name)
		})
	}
}

func TestRequireFuncOptions(t *testing.T) {
	t.Parallel()
	custom := func(status int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			if res, ok := middleware.DecisionFromContext(r.Context()); ok {
				_, _ = io.WriteString(w, "custom "+res.Status.String())
				return
			}
			_, _ = io.WriteString(w, "custom undecided")
		})
	}
	byPath := func(r *http.Request) (string, []string) { return "orders", []string{"read", "write"} }

	t.Run("denied handler replaces 403 and sees the result", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{res: result(pep.Deny, nil)}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithDeniedHandler(custom(http.StatusNotFound)))
		got := serve(t, mw(reached), http.MethodGet, "Bearer tok")
		assert.Equal(t, http.StatusNotFound, got.status)
		assert.Equal(t, "custom DENY", got.body)
		assert.Equal(t, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}, fc.got)
	})
	t.Run("unauthorized handler replaces 401", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithUnauthorizedHandler(custom(http.StatusTeapot)))
		got := serve(t, mw(reached), http.MethodGet, "")
		assert.Equal(t, http.StatusTeapot, got.status)
		assert.Equal(t, "custom undecided", got.body)
		assert.Zero(t, fc.calls.Load())
	})
	t.Run("client token checks requests without a token", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{res: result(pep.Grant, nil)}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithClientToken())
		got := serve(t, mw(reached), http.MethodGet, "")
		assert.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, int32(1), fc.calls.Load())
	})
	t.Run("client token missing is 500, not the caller's fault", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{err: pep.ErrNoToken}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithClientToken())
		got := serve(t, mw(reached), http.MethodGet, "")
		assert.Equal(t, http.StatusInternalServerError, got.status)
		errorBody(t, got.body)
	})
	t.Run("a func naming nothing is 500 without a gateway call", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{res: result(pep.Grant, nil)}
		for _, fn := range []func(*http.Request) (string, []string){
			func(*http.Request) (string, []string) { return "", []string{"read"} },
			func(*http.Request) (string, []string) { return "orders", nil },
		} {
			got := serve(t, middleware.RequireFunc(fc, fn)(reached), http.MethodGet, "Bearer tok")
			assert.Equal(t, http.StatusInternalServerError, got.status)
		}
		assert.Zero(t, fc.calls.Load())
	})
}

func TestDecisionFromContextWithoutMiddleware(t *testing.T) {
	t.Parallel()
	_, ok := middleware.DecisionFromContext(t.Context())
	assert.False(t, ok)
}
