// Package echopep protects echo routes with decisions from a pep client:
// the handlers of package middleware, with the same rules and the same
// answers, as echo.MiddlewareFunc.
//
//	e := echo.New()
//	e.GET("/orders/:id", getOrder, echopep.Require(client, "orders", "read"))
//
// Wrap adapts any middleware.Middleware (Require or RequireFunc with
// options, RequireAuthZEN); RequireFunc names the resource and scopes per
// request from the echo.Context (its Path, its Params). When the request
// is let through, the next handler runs with c.Request() carrying the
// decision (Decision reads it) and its error is returned; otherwise the
// middleware's answer (400, 401, 403, 413, 415 or the outage answer, in
// the service's error shape) is written, the next handler does not run and
// nil is returned. Nothing a caller sends makes it answer 500 or panic;
// wiring mistakes panic when the middleware is built.
// A resource function (or Checker) that panics is recovered by the
// middleware: the request gets its 403 and the panic is logged at Error
// (middleware.WithLogger), with or without echo's Recover middleware.
//
// Use it on routes or groups: as Echo-wide middleware (e.Use) it also runs
// for requests that match no route, which then get its 403 (their
// resource function names nothing) rather than echo's 404.
package echopep

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// call is one request's passage through the guard.
type call struct {
	c      echo.Context
	next   echo.HandlerFunc
	passed bool
	err    error
}

type callKey struct{}

// Wrap returns echo middleware that runs m's guard: built once, here (so
// m's wiring mistakes panic now), and run for every request. It is safe
// for concurrent use. A nil m panics.
func Wrap(m middleware.Middleware) echo.MiddlewareFunc {
	if m == nil {
		panic("echopep: Wrap needs a middleware.Middleware, not nil")
	}
	guard := m(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		cl := r.Context().Value(callKey{}).(*call)
		cl.passed = true
		cl.c.SetRequest(r)
		cl.err = cl.next(cl.c)
	}))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			cl := &call{c: c, next: next}
			r := c.Request()
			guard.ServeHTTP(c.Response(), r.WithContext(context.WithValue(r.Context(), callKey{}, cl)))
			if !cl.passed {
				return nil
			}
			return cl.err
		}
	}
}

// Require returns echo middleware that lets a request through only when
// the caller holds every one of scopes on resource: middleware.Require's
// rules and answers. Its wiring mistakes (a nil checker, a resource "" or
// "*", no scope or an empty one) panic.
func Require(c middleware.Checker, resource string, scopes ...string) echo.MiddlewareFunc {
	return Wrap(middleware.Require(c, resource, scopes...))
}

// RequireFunc is Require with the resource and scopes chosen per request
// by fn, from the echo context (c.Path(), c.Param, ...), and with the
// middleware's options. fn sees c.Request() with the method the guard
// checks (see middleware.WithMethodOverride). A resource fn returns that
// the client refuses to check ("" or "*") or no scope is 403 without a
// gateway call. A nil checker or fn, or a nil option, panics.
func RequireFunc(c middleware.Checker, fn func(echo.Context) (resource string, scopes []string), opts ...middleware.Option) echo.MiddlewareFunc {
	if fn == nil {
		panic("echopep: RequireFunc needs a resource function, not nil")
	}
	return Wrap(middleware.RequireFunc(c, func(r *http.Request) (string, []string) {
		ec := r.Context().Value(callKey{}).(*call).c
		saved := ec.Request()
		ec.SetRequest(r)
		defer ec.SetRequest(saved)
		return fn(ec)
	}, opts...))
}

// Decision returns the decision that let the request through, and false
// when no guard of this package (or of package middleware) decided it.
func Decision(c echo.Context) (pep.Result, bool) {
	return middleware.DecisionFromContext(c.Request().Context())
}
