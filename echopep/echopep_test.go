package echopep_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/echopep"
	"github.com/orgauthz/orgauthz/internal/adaptertest"
	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// rule names the resource and scopes of a route by its pattern and the
// :op parameter, from the shared table's Operations.
func rule(c echo.Context) (string, []string) {
	res, ok := adaptertest.Operations[c.Param("op")]
	if !ok || c.Path() != "/orders/:op" {
		return "", nil
	}
	return res.Name, res.Scopes
}

// service is the shared table's test service on echo's own router.
func service(_ *testing.T, c adaptertest.Checker) http.Handler {
	e := echo.New()
	e.GET("/orders/:op", func(c echo.Context) error {
		body := adaptertest.Ran + c.Param("op")
		if _, ok := echopep.Decision(c); !ok {
			body += adaptertest.NoDecision
		}
		return c.String(http.StatusOK, body)
	}, echopep.RequireFunc(c, rule, middleware.WithUnavailableHandler(middleware.ServiceUnavailable(time.Second))))
	return e
}

// The table every adapter shares (internal/adaptertest), over a loopback
// server with echo's router.
func TestAdapterTable(t *testing.T) {
	t.Parallel()
	adaptertest.RunHTTP(t, adaptertest.Start(t), service)
}

// get sends GET path with the given authorization (none when empty) and
// extra headers, and returns the status, the body and the X-Trace header.
func get(t *testing.T, srv *httptest.Server, path, auth string, header ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header.Get("X-Trace")
}

var errTeapot = echo.NewHTTPError(http.StatusTeapot, "the handler's own error")

// A guard in an echo chain: the middleware before it runs in any case,
// the handler only when it lets the request through, sees the decision,
// and its error reaches echo's error handler; a group guarded by Require
// guards each of its routes.
func TestChain(t *testing.T) {
	t.Parallel()
	env := adaptertest.Start(t)
	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Response().Header().Set("X-Trace", "outer")
			return next(c)
		}
	})
	orders := e.Group("/orders", echopep.Require(env.Client, "orders", "read"))
	orders.GET("/:id", func(c echo.Context) error {
		res, ok := echopep.Decision(c)
		if !ok || !res.Allowed() {
			return c.String(http.StatusTeapot, "no decision")
		}
		return c.String(http.StatusOK, "order "+c.Param("id")+" "+res.Status.String())
	})
	orders.GET("/fails", func(echo.Context) error { return errTeapot })
	orders.GET("/files/*", func(c echo.Context) error { return c.String(http.StatusOK, "file") })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	ann, ben := "Bearer "+env.Tokens["ann"], "Bearer "+env.Tokens["ben"]

	tests := []struct {
		name   string
		path   string
		auth   string
		header []string
		status int
		body   string
	}{
		{"granted: the handler runs and sees the decision", "/orders/42", ann, nil, 200, "order 42 GRANT"},
		{"granted: the handler's error reaches echo", "/orders/fails", ann, nil, 418, ""},
		{"denied: the handler does not run", "/orders/42", ben, nil, 403, ""},
		{"denied: nor does the failing one", "/orders/fails", ben, nil, 403, ""},
		{"no token", "/orders/42", "", nil, 401, ""},
		{"a path not in canonical form is the middleware's 400", "/orders/files/a/../b", ann, nil, 400, ""},
		{"a method override is the middleware's 400", "/orders/42", ann, []string{"X-HTTP-Method-Override", "DELETE"}, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body, trace := get(t, srv, tt.path, tt.auth, tt.header...)
			assert.Equal(t, tt.status, status, body)
			assert.Equal(t, "outer", trace, "the middleware before the guard ran")
			switch tt.status {
			case http.StatusOK:
				assert.Equal(t, tt.body, body)
			case http.StatusTeapot:
				assert.Contains(t, body, "the handler's own error")
			default:
				adaptertest.CheckErrorBody(t, status, []byte(body))
			}
		})
	}
}

// The handler's error is Wrap's, unchanged.
func TestHandlerErrorIsReturned(t *testing.T) {
	t.Parallel()
	e := echo.New()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/orders/1", nil)
	req.Header.Set("Authorization", "Bearer tok")
	c := e.NewContext(req, httptest.NewRecorder())
	err := echopep.Require(adaptertest.Granter{}, "orders", "read")(func(echo.Context) error { return errTeapot })(c)
	require.True(t, errors.Is(err, errTeapot), "%v", err)
}

// RequireFunc's function sees the method the guard checks.
func TestRequireFuncSeesTheCheckedMethod(t *testing.T) {
	t.Parallel()
	var seen string
	e := echo.New()
	e.POST("/orders", func(c echo.Context) error { return c.String(http.StatusOK, "ok") },
		echopep.RequireFunc(adaptertest.Granter{}, func(c echo.Context) (string, []string) {
			seen = c.Request().Method
			return "orders", []string{"delete"}
		}, middleware.WithMethodOverride("X-HTTP-Method-Override")))
	status, body := adaptertest.PostOverridden(t, e)
	assert.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "DELETE", seen)
}

// Wiring mistakes panic when the middleware is built, saying what to fix.
func TestWiringMistakesPanic(t *testing.T) {
	t.Parallel()
	var nilClient *pep.Client
	tests := []struct {
		name  string
		build func()
		says  string
	}{
		{"Wrap(nil)", func() { echopep.Wrap(nil) }, "not nil"},
		{"a nil checker", func() { echopep.Require(nilClient, "orders", "read") }, "the Checker is nil"},
		{"no scope", func() { echopep.Require(adaptertest.Granter{}, "orders") }, "at least one scope"},
		{"a nil function", func() { echopep.RequireFunc(adaptertest.Granter{}, nil) }, "not nil"},
		{"a nil option", func() {
			echopep.RequireFunc(adaptertest.Granter{}, func(echo.Context) (string, []string) { return "", nil }, nil)
		}, "an Option is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, r, tt.says)
			}()
			tt.build()
		})
	}
}

// TestTrustedFormBodyReadEndsWithTheRequestContext: the body read before
// the decision reaches the connection through echo's writer (a-client10b
// F3).
func TestTrustedFormBodyReadEndsWithTheRequestContext(t *testing.T) {
	t.Parallel()
	adaptertest.StalledFormBody(t, func(m middleware.Middleware) http.Handler {
		e := echo.New()
		e.POST("/orders/:id", func(c echo.Context) error { return c.String(http.StatusOK, "ran") }, echopep.Wrap(m))
		return e
	})
}
