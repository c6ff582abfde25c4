// Package ginpep protects gin routes with decisions from a pep client: the
// handlers of package middleware, with the same rules and the same answers,
// as gin.HandlerFunc.
//
//	r := gin.New()
//	r.GET("/orders/:id", ginpep.Require(client, "orders", "read"), getOrder)
//
// Wrap adapts any middleware.Middleware (Require or RequireFunc with
// options, RequireAuthZEN); RequireFunc names the resource and scopes per
// request from the *gin.Context (its FullPath, its Params). The guard runs
// before the rest of the chain: when the request is let through, the next
// handlers run with c.Request carrying the decision (Decision reads it);
// otherwise the middleware's answer (400, 401, 403, 413, 415 or the outage
// answer, in the service's error shape) is written and the chain is
// aborted. Nothing a caller sends makes it answer 500 or panic; wiring
// mistakes panic when the handler is built.
// A resource function (or Checker) that panics is recovered by the
// middleware: the request gets its 403 and the panic is logged at Error
// (middleware.WithLogger), with or without gin's Recovery middleware.
//
// Use it on routes or groups: as engine-wide middleware (r.Use) it also
// runs for requests that match no route, which then get its 403 (their
// resource function names nothing) rather than gin's 404.
package ginpep

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// call is one request's passage through the guard.
type call struct {
	c      *gin.Context
	passed bool
}

type callKey struct{}

// Wrap returns a gin handler that runs m's guard: built once, here (so m's
// wiring mistakes panic now), and run for every request. It is safe for
// concurrent use. A nil m panics.
func Wrap(m middleware.Middleware) gin.HandlerFunc {
	if m == nil {
		panic("ginpep: Wrap needs a middleware.Middleware, not nil")
	}
	guard := m(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		cl := r.Context().Value(callKey{}).(*call)
		cl.passed = true
		cl.c.Request = r
		cl.c.Next()
	}))
	return func(c *gin.Context) {
		cl := &call{c: c}
		guard.ServeHTTP(c.Writer, c.Request.WithContext(context.WithValue(c.Request.Context(), callKey{}, cl)))
		if !cl.passed {
			c.Abort()
		}
	}
}

// Require returns a gin handler that lets a request through only when the
// caller holds every one of scopes on resource: middleware.Require's rules
// and answers. Its wiring mistakes (a nil checker, a resource "" or "*",
// no scope or an empty one) panic.
func Require(c middleware.Checker, resource string, scopes ...string) gin.HandlerFunc {
	return Wrap(middleware.Require(c, resource, scopes...))
}

// RequireFunc is Require with the resource and scopes chosen per request
// by fn, from the gin context (c.FullPath(), c.Param, ...), and with the
// middleware's options. fn sees c.Request with the method the guard
// checks (see middleware.WithMethodOverride). A resource fn returns that
// the client refuses to check ("" or "*") or no scope is 403 without a
// gateway call. A nil checker or fn, or a nil option, panics.
func RequireFunc(c middleware.Checker, fn func(*gin.Context) (resource string, scopes []string), opts ...middleware.Option) gin.HandlerFunc {
	if fn == nil {
		panic("ginpep: RequireFunc needs a resource function, not nil")
	}
	return Wrap(middleware.RequireFunc(c, func(r *http.Request) (string, []string) {
		gc := r.Context().Value(callKey{}).(*call).c
		saved := gc.Request
		gc.Request = r
		defer func() { gc.Request = saved }()
		return fn(gc)
	}, opts...))
}

// Decision returns the decision that let the request through, and false
// when no guard of this package (or of package middleware) decided it.
func Decision(c *gin.Context) (pep.Result, bool) {
	return middleware.DecisionFromContext(c.Request.Context())
}
