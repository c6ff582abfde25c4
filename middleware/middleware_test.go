package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// fakeChecker answers with a fixed result and error, or, with grant, a
// GRANT of every pair it is asked about, and counts its calls.
type fakeChecker struct {
	res   pep.Result
	err   error
	grant bool
	calls atomic.Int32
	got   []pep.Resource
}

func (f *fakeChecker) CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error) {
	f.calls.Add(1)
	f.got = resources
	if f.grant {
		return adaptertest.Granter{}.CheckMany(ctx, resources, opts...)
	}
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
	header    http.Header
}

func serve(t *testing.T, h http.Handler, method, auth string) answer {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, "/orders/42", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{status: rec.Code, body: rec.Body.String(), challenge: rec.Header().Get("WWW-Authenticate"), header: rec.Header()}
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

// TestRequireAnswers: the answer to each outcome of the Checker, and the
// malformed tokens refused without a call. The token grammar rows the
// adapters share (the scheme's case, the spaces after it, another scheme,
// padding only, two tokens in one value) are TestAdapterTable's.
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
		{name: "no token is 401 without a gateway call", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "an empty Bearer is no token", auth: "Bearer ", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "deny is 403", auth: "Bearer tok", res: result(pep.Deny, nil), status: 403, errName: "Forbidden", calls: 1},
		{name: "a fail-closed deny is 403", auth: "Bearer tok", res: result(pep.Deny, pep.ErrUnavailable), status: 403, errName: "Forbidden", calls: 1},
		{name: "error status is 403", auth: "Bearer tok", res: result(pep.Error, nil), status: 403, errName: "Forbidden", calls: 1},
		{name: "the zero result is 403", auth: "Bearer tok", status: 403, errName: "Forbidden", calls: 1},
		{name: "a refused token is 401 with invalid_token", auth: "Bearer tok", res: result(pep.Deny, nil), err: unauthorized,
			status: 401, errName: "Unauthorized", challenge: `Bearer error="invalid_token"`, calls: 1},
		{name: "an unforeseen error is no decision, never 500", auth: "Bearer tok", err: errors.New("pep: something new"), status: 403, errName: "Forbidden", calls: 1},
		{name: "a refused DPoP proof is no decision", auth: "Bearer tok", err: pep.ErrProofRejected, status: 403, errName: "Forbidden", calls: 1},
		{name: "a token pep refuses to send is 401", auth: "Bearer tok", err: pep.ErrNoToken, status: 401, errName: "Unauthorized", challenge: `Bearer error="invalid_token"`, calls: 1},
		{name: "a token with a space is 401 without a call", auth: "Bearer a b", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "a token with non-ASCII is 401 without a call", auth: "Bearer café", status: 401, errName: "Unauthorized", challenge: "Bearer", calls: 0},
		{name: "padding and the b64token alphabet are accepted", auth: "Bearer aZ09-._~+/==", res: result(pep.Grant, nil), status: 200, calls: 1},
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
		fc := &fakeChecker{grant: true}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithClientToken())
		got := serve(t, mw(reached), http.MethodGet, "")
		assert.Equal(t, http.StatusOK, got.status)
		assert.Equal(t, int32(1), fc.calls.Load())
	})
	t.Run("a refused client token is the service's outage, not the caller's 401", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{err: &pep.ResponseError{StatusCode: http.StatusUnauthorized}}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithClientToken(),
			middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))
		got := serve(t, mw(reached), http.MethodGet, "Bearer the-callers-own")
		assert.Equal(t, http.StatusServiceUnavailable, got.status)
		assert.Empty(t, got.challenge)
	})
	t.Run("client token missing is no decision, not the caller's fault", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{err: pep.ErrNoToken}
		mw := middleware.RequireFunc(fc, byPath, middleware.WithClientToken(),
			middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second)))
		got := serve(t, mw(reached), http.MethodGet, "")
		assert.Equal(t, http.StatusServiceUnavailable, got.status)
		assert.Empty(t, got.challenge)
		errorBody(t, got.body)
	})
	t.Run("a func naming nothing checkable is 403 without a gateway call", func(t *testing.T) {
		t.Parallel()
		// Even a Checker that would grant anything is not asked.
		fc := &fakeChecker{grant: true}
		for name, fn := range map[string]func(*http.Request) (string, []string){
			"empty resource": func(*http.Request) (string, []string) { return "", []string{"read"} },
			"wildcard":       func(*http.Request) (string, []string) { return "*", []string{"read"} },
			"no scopes":      func(*http.Request) (string, []string) { return "orders", nil },
			"empty scope":    func(*http.Request) (string, []string) { return "orders", []string{"read", ""} },
		} {
			got := serve(t, middleware.RequireFunc(fc, fn)(reached), http.MethodGet, "Bearer tok")
			assert.Equal(t, http.StatusForbidden, got.status, name)
			errorBody(t, got.body)
		}
		assert.Zero(t, fc.calls.Load())
	})
	t.Run("Require takes options through With", func(t *testing.T) {
		t.Parallel()
		fc := &fakeChecker{res: result(pep.Deny, nil)}
		mw := middleware.Require(fc, "orders", "read").With(middleware.WithDeniedHandler(custom(http.StatusNotFound)))
		got := serve(t, mw(reached), http.MethodGet, "Bearer tok")
		assert.Equal(t, http.StatusNotFound, got.status)
		assert.Equal(t, "custom DENY", got.body)
	})
	t.Run("outage answer", func(t *testing.T) {
		t.Parallel()
		down := pep.Result{Status: pep.Deny, Decisions: []pep.Decision{
			{Resource: "orders", Scope: "read", Status: pep.Deny, Cause: pep.ErrCircuitOpen},
			{Resource: "orders", Scope: "write", Status: pep.Deny, Cause: &pep.ResponseError{StatusCode: 503}},
		}}
		mixed := pep.Result{Status: pep.Deny, Decisions: []pep.Decision{
			{Resource: "orders", Scope: "read", Status: pep.Deny, Cause: pep.ErrCircuitOpen},
			{Resource: "orders", Scope: "write", Status: pep.Deny}, // the gateway said no
		}}
		unavailable := middleware.WithUnavailableHandler(middleware.ServiceUnavailable(1500 * time.Millisecond))

		got := serve(t, middleware.RequireFunc(&fakeChecker{res: down}, byPath, unavailable)(reached), http.MethodGet, "Bearer tok")
		assert.Equal(t, http.StatusServiceUnavailable, got.status)
		assert.Equal(t, "2", got.header.Get("Retry-After"))
		name, _ := errorBody(t, got.body)
		assert.Equal(t, "Service Unavailable", name)

		got = serve(t, middleware.RequireFunc(&fakeChecker{res: mixed}, byPath, unavailable)(reached), http.MethodGet, "Bearer tok")
		assert.Equal(t, http.StatusForbidden, got.status, "a real denial is not an outage")

		got = serve(t, middleware.RequireFunc(&fakeChecker{res: down}, byPath)(reached), http.MethodGet, "Bearer tok")
		assert.Equal(t, http.StatusForbidden, got.status, "an outage is 403 by default")

		// The client's own token replaced while the call was under way: no
		// decision, not the caller's doing; asking again decides it.
		changed := result(pep.Deny, pep.ErrTokenChanged)
		got = serve(t, middleware.RequireFunc(&fakeChecker{res: changed}, byPath, middleware.WithClientToken(), unavailable)(reached), http.MethodGet, "")
		assert.Equal(t, http.StatusServiceUnavailable, got.status, "a token change is no decision")

		// A closed client (a service shutting down) decides nothing.
		got = serve(t, middleware.RequireFunc(&fakeChecker{res: result(pep.Deny, pep.ErrClosed), err: pep.ErrClosed}, byPath, unavailable)(reached), http.MethodGet, "Bearer tok")
		assert.Equal(t, http.StatusServiceUnavailable, got.status, "a closed client is no decision")
	})
}

func TestDecisionFromContextWithoutMiddleware(t *testing.T) {
	t.Parallel()
	_, ok := middleware.DecisionFromContext(t.Context())
	assert.False(t, ok)
}

func TestHostileRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		target string
		auth   []string
		status int
	}{
		{"two Authorization headers", "/orders/42", []string{"Bearer a", "Bearer b"}, http.StatusBadRequest},
		{"an encoded slash", "/files/public%2F..%2Fsecret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"an encoded slash, lower case", "/files/public%2f..%2fsecret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"an encoded backslash", "/files/public%5C..%5Csecret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"a dot-dot segment", "/files/public/../secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"an encoded dot-dot segment", "/files/public/%2e%2e/secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"a dot segment", "/files/./secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"an empty segment", "/files//secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"a NUL byte", "/files/a%00b", []string{"Bearer tok"}, http.StatusBadRequest},
		{"double-encoded dot-dot", "/files/public/%252e%252e/secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"double-encoded slash", "/files/public%252F..%252Fsecret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"a Tomcat path parameter on dot-dot", "/files/public/..;/secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"dot-dot and a space", "/files/public/..%20/secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"three dots", "/files/public/.../secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"overlong UTF-8 dot", "/files/public/%c0%ae%c0%ae/secret", []string{"Bearer tok"}, http.StatusBadRequest},
		{"invalid UTF-8", "/files/%ff", []string{"Bearer tok"}, http.StatusBadRequest},
		{"a path parameter on a name", "/files/public;v=1/report", []string{"Bearer tok"}, http.StatusOK},
		{"a dotted name", "/files/report.v1.pdf", []string{"Bearer tok"}, http.StatusOK},
		{"a percent sign that is no escape", "/files/100%25", []string{"Bearer tok"}, http.StatusOK},
		{"a canonical path with a trailing slash", "/files/public/", []string{"Bearer tok"}, http.StatusOK},
		{"a canonical path", "/files/public/report", []string{"Bearer tok"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeChecker{grant: true}
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, tt.target, nil)
			for _, a := range tt.auth {
				req.Header.Add("Authorization", a)
			}
			rec := httptest.NewRecorder()
			middleware.Require(fc, "files", "read")(reached).ServeHTTP(rec, req)
			assert.Equal(t, tt.status, rec.Code, "body %s", rec.Body.String())
			if tt.status != http.StatusOK {
				assert.Zero(t, fc.calls.Load(), "nothing is sent for a refused request")
				errorBody(t, rec.Body.String())
			}
		})
	}
}

func TestWiringMistakesPanicWhenBuilt(t *testing.T) {
	t.Parallel()
	fc := &fakeChecker{}
	fn := middleware.Static("orders", "read")
	tests := map[string]func(){
		"nil checker":                  func() { middleware.Require(nil, "orders", "read") },
		"typed nil checker":            func() { middleware.Require((*pep.Client)(nil), "orders", "read") },
		"no scope":                     func() { middleware.Require(fc, "orders") },
		"empty scope":                  func() { middleware.Require(fc, "orders", "") },
		"empty resource":               func() { middleware.Require(fc, "", "read") },
		"wildcard resource":            func() { middleware.Require(fc, "*", "read") },
		"nil function":                 func() { middleware.RequireFunc(fc, nil) },
		"nil option":                   func() { middleware.RequireFunc(fc, fn, nil) },
		"nil denied handler":           func() { middleware.RequireFunc(fc, fn, middleware.WithDeniedHandler(nil)) },
		"nil unauthorized handler":     func() { middleware.RequireFunc(fc, fn, middleware.WithUnauthorizedHandler(nil)) },
		"nil unavailable handler":      func() { middleware.RequireFunc(fc, fn, middleware.WithUnavailableHandler(nil)) },
		"typed nil handler option":     func() { middleware.RequireFunc(fc, fn, middleware.WithDeniedHandler((*http.ServeMux)(nil))) },
		"nil option through With":      func() { middleware.Require(fc, "orders", "read").With(nil) },
		"nil handler through With":     func() { middleware.Require(fc, "orders", "read").With(middleware.WithDeniedHandler(nil)) },
		"nil handler to protect":       func() { middleware.Require(fc, "orders", "read")(nil) },
		"nil handler to protect, With": func() { middleware.Require(fc, "orders", "read").With()(nil) },
		"nil logger":                   func() { middleware.Require(fc, "orders", "read").With(middleware.WithLogger(nil)) },
	}
	// WithMethodOverride takes header names and the form key _method; no
	// name, or a name that is neither, is a wiring mistake.
	for _, names := range [][]string{nil, {""}, {"X Override"}, {"X-Override:"}, {"_method", "X Override"}} {
		tests[fmt.Sprintf("method override %q", names)] = func() {
			middleware.Require(fc, "orders", "read").With(middleware.WithMethodOverride(names...))
		}
	}
	for name, build := range tests {
		assert.Panics(t, build, name)
	}
	assert.PanicsWithValue(t, "middleware: WithLogger was given a nil logger", tests["nil logger"])
	assert.NotPanics(t, func() {
		middleware.Require(fc, "orders", "read").With(middleware.WithMethodOverride("X-HTTP-Method-Override", "_method", "X-Custom-Method"))
	})
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers []string
		want    string
		wantErr error
	}{
		{"none", nil, "", middleware.ErrNoBearerToken},
		{"two", []string{"Bearer first-token", "Bearer second-token"}, "", middleware.ErrMultipleAuthorization},
		{"basic", []string{"Basic dXNlcjpwdw=="}, "", middleware.ErrMalformedBearer},
		{"scheme only", []string{"Bearer"}, "", middleware.ErrMalformedBearer},
		{"space inside", []string{"Bearer secret part"}, "", middleware.ErrMalformedBearer},
		{"non-ASCII", []string{"Bearer café"}, "", middleware.ErrMalformedBearer},
		{"control character", []string{"Bearer secret\x01part"}, "", middleware.ErrMalformedBearer},
		{"a JWT", []string{"Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"}, "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", nil},
		{"scheme in any case", []string{"bEaReR tok"}, "tok", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
			for _, h := range tt.headers {
				req.Header.Add("Authorization", h)
			}
			got, err := middleware.BearerToken(req)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Empty(t, got)
				for _, h := range tt.headers {
					if _, tok, _ := strings.Cut(h, " "); tok != "" {
						assert.NotContains(t, err.Error(), tok, "an error never quotes the token")
					}
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
