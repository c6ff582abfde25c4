// Package middleware protects net/http handlers with decisions from a pep
// client, in one line:
//
//	mux.Handle("GET /orders", middleware.Require(client, "orders", "read")(ordersHandler))
//
// The caller's Bearer token is forwarded to the gateway (pep.WithToken), and
// the request's method and path are sent as the decision context. The next
// handler runs only when every scope is granted; it can read the decision
// with DecisionFromContext. Otherwise the middleware answers in the
// service's error shape, {"error": "...", "message": "..."}:
//
//   - no Bearer token: 401 with WWW-Authenticate, and no gateway call;
//   - the gateway refused the token (pep.ErrUnauthorized): 401 with
//     WWW-Authenticate;
//   - any denial, a fail-closed one included: 403;
//   - a misuse of the library (a RequireFunc that names no resource, or
//     WithClientToken on a client that has no token): 500, and the handler
//     does not run.
//
// Middlewares are plain func(http.Handler) http.Handler values, so they
// compose with any router or middleware chain.
package middleware
