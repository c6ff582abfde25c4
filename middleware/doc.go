// Package middleware protects net/http handlers with decisions from a pep
// client, in one line:
//
//	mux.Handle("GET /orders", middleware.Require(client, "orders", "read")(ordersHandler))
//
// The caller's Bearer token is forwarded to the gateway as a per-call token
// (as pep.WithToken sends it), and the request's method (see
// WithMethodOverride; a HEAD, which ServeMux serves with a GET route's
// handler, as GET) and path are sent as the decision context. A
// *pep.Client is asked without going through its public call options, so
// that a request whose decisions it has cached allocates once in the
// middleware (the request copy that carries the decision, together with
// its context) and sends nothing. A digest of the token of a request the
// middleware granted is kept (a keyed hash, in a table of 128 words shared
// by every guard of the process; never the token's bytes), so that the
// next request with the same token is not checked against RFC 6750's
// grammar again. Nothing is kept of a request that was not granted. The next
// handler runs only when every scope is granted; it can read the decision
// with DecisionFromContext. Otherwise the middleware answers in the
// service's error shape, {"error": "...", "message": "..."}:
//
//   - more than one Authorization header, or a path that does not start
//     with '/' (http.StripPrefix("/api/", ...) leaves one) or is not in
//     canonical form (dot segments, empty segments, encoded slashes, or an
//     escape in a path not sent as net/url escapes it: a path-prefix policy,
//     or a router that reads the path as sent, could read it otherwise than
//     the handler): 400, and no gateway call;
//   - a method override (a header X-HTTP-Method-Override, X-HTTP-Method or
//     X-Method-Override, also spelt with '_' for '-', or the form key
//     _method in the query or a form parsed already: a stack honouring it
//     would perform another method than the one checked): 400, and no
//     gateway call, unless WithMethodOverride names it as one to trust,
//     whose method is then the one checked and sent; _method in the query
//     is refused even then (a stack reading the body only would not see
//     it). _method is any key net/http, PHP (Symfony, Laravel), Rack or
//     Express reads as _method (".method", "[_method]", "_method[]"...).
//     Nothing after the headers is read before the decision unless the
//     service trusts _method: a POST body any of them parses as a form
//     (urlencoded, multipart, or without a Content-Type) streams to the
//     handler, whose read fails with ErrFormMethodOverride where the body
//     holds such a key or names such a part, so the stack takes no method
//     from it;
//   - with _method trusted, a urlencoded POST body over 64 KiB (the
//     middleware reads it before the decision, once the caller's token has
//     been read, and gives it back whole): 413; a form body with a
//     Content-Encoding, trusted or not (its headers say so): 415; and no
//     gateway call;
//   - no Bearer token, or one the client cannot send (BearerToken says
//     which, or it is longer than the client's pep.WithMaxTokenBytes): 401
//     with WWW-Authenticate, and no gateway call;
//   - the gateway refused the token (pep.ErrUnauthorized): 401 with
//     WWW-Authenticate;
//   - a resource the client refuses to check (empty, or the wildcard "*")
//     or no scope, whatever the request made RequireFunc's function return:
//     403, and no gateway call;
//   - any denial, a fail-closed one included: 403; WithUnavailableHandler
//     picks another answer (ServiceUnavailable: 503 with Retry-After) for a
//     denial that came only from an outage;
//   - WithClientToken on a client that has no token (not set yet, or
//     cleared by a refresh: ClearToken then SetToken), or a 401 for that
//     token: the unavailable answer, the service's own state, not the
//     caller's doing;
//   - a client that was closed (pep.ErrClosed, a service shutting down):
//     the unavailable answer.
//
// Nothing a caller sends makes the middleware answer 500 or panic. Wiring
// mistakes do panic, when the middleware is built rather than on the first
// request: a nil Checker or function, no scope, a nil option or handler.
// A user callback the middleware calls on a request (the resource,
// subject or target function, the Checker or Evaluator) that panics is
// the user's bug: it is recovered, logged at Error (WithLogger) and the
// request gets the denied answer (403), so the middleware fails closed
// with an answer under any router, whether it recovers panics or not. A
// panic in a handler (the protected one, or an answer's) is not
// recovered.
//
// Require and RequireFunc return a Middleware, a plain
// func(http.Handler) http.Handler that composes with any router or
// middleware chain; Require's options are given with With:
//
//	middleware.Require(client, "orders", "read").With(
//		middleware.WithUnavailableHandler(middleware.ServiceUnavailable(5*time.Second)))
//
// RequireAuthZEN does the same with an AuthZEN PDP (an Evaluator such as
// *authzen.Client, which asks with the service's own credential): a subject
// function names the caller (401 when it cannot), a target function the
// action and resource of each request (403 when incomplete), and the
// decision fails closed by the same rules, an outage getting the
// unavailable answer.
package middleware
