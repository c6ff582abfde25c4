package echopep_test

import (
	"errors"
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
	ann, ben := "Bearer "+env.Tokens["ann"], "Bearer "+env.Tokens["ben"]
	adaptertest.RunChain(t, e, []adaptertest.ChainCase{
		{Name: "granted: the handler runs and sees the decision", Path: "/orders/42", Auth: ann, Status: 200, Body: "order 42 GRANT"},
		{Name: "granted: the handler's error reaches echo", Path: "/orders/fails", Auth: ann, Status: 418, Body: "the handler's own error"},
		{Name: "denied: the handler does not run", Path: "/orders/42", Auth: ben, Status: 403},
		{Name: "denied: nor does the failing one", Path: "/orders/fails", Auth: ben, Status: 403},
		{Name: "no token", Path: "/orders/42", Status: 401},
		{Name: "a path not in canonical form is the middleware's 400", Path: "/orders/files/a/../b", Auth: ann, Status: 400},
		{Name: "a method override is the middleware's 400", Path: "/orders/42", Auth: ann, Header: []string{"X-HTTP-Method-Override", "DELETE"}, Status: 400},
	})
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
	adaptertest.RunMistakes(t, []adaptertest.Mistake{
		{Name: "Wrap(nil)", Build: func() { echopep.Wrap(nil) }, Says: "not nil"},
		{Name: "a nil checker", Build: func() { echopep.Require(nilClient, "orders", "read") }, Says: "the Checker is nil"},
		{Name: "no scope", Build: func() { echopep.Require(adaptertest.Granter{}, "orders") }, Says: "at least one scope"},
		{Name: "a nil function", Build: func() { echopep.RequireFunc(adaptertest.Granter{}, nil) }, Says: "not nil"},
		{Name: "a nil option", Build: func() {
			echopep.RequireFunc(adaptertest.Granter{}, func(echo.Context) (string, []string) { return "", nil }, nil)
		}, Says: "an Option is nil"},
	})
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
