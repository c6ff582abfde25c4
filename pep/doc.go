// Package pep is the policy enforcement point of orgauthz: a client that asks
// the Organization and Authorization Service's gateway whether a caller may
// use a scope on a resource, and that fails closed.
//
//	c, err := pep.New("https://gateway.example.com", "acme", "orders-api")
//	if err != nil { ... }
//	c.SetToken(accessToken)
//	d, err := c.Check(ctx, "orders", "read")
//	if err != nil { ... }          // no token, or the gateway refused the token (401)
//	if !d.Allowed() { ... deny }   // d.Cause says why when the client failed closed
//
// # Failing closed
//
// Decision.Allowed and Result.Allowed are true only for an explicit GRANT
// that the gateway returned for exactly that pair in a 200 answer that
// parsed completely. Every other outcome is a DENY: the gateway unreachable
// or too slow, a 5xx after retries, a 400 or 403, a redirect, a body that
// does not parse or exceeds 1 MiB, a pair missing from the answer or
// returned twice with different statuses, an open circuit breaker. These
// denials carry a Cause (errors.Is(cause, ErrUnavailable) for transport
// failures, timeouts and the breaker; a *ResponseError for gateway answers)
// and come with a nil error. A 401 is different: it is returned as an error
// matching ErrUnauthorized, and the client emits tokenExpired.
//
// # Transport
//
// Requests pass three http.RoundTripper layers: retries (go-retryablehttp:
// connection errors, 429, 502, 503 and 504 only, exponential backoff with
// jitter, Retry-After honoured, never past the call's deadline), then the
// token layer (which clones each attempt and sets its Authorization
// header, and for DPoP a new proof), then the base transport of the *http.Client given with
// WithHTTPClient, which is copied and never modified. Redirects are never
// followed.
//
// # Caching, batching, coalescing
//
// Gateway GRANT and DENY answers are cached per token, realm, client,
// resource, scope and request context; two tokens never share an entry.
// CheckMany answers cached pairs locally and sends the rest in batches,
// several at a time. Identical concurrent requests share one gateway request.
// SetToken, ClearToken and a 401 purge the token's entries.
//
// # Tokens and events
//
// The client's token is set with SetToken (Bearer) or SetDPoPToken (DPoP,
// RFC 9449: every attempt carries a fresh proof, the latest DPoP-Nonce of
// the gateway is used, and a use_dpop_nonce challenge is answered once) and
// removed with ClearToken; a per-call Bearer token can be given with
// WithToken. Token lifecycle events
// (package events) are delivered to handlers registered with
// WithEventHandler or Subscribe.
//
// A Client is safe for concurrent use; a token never appears in its errors
// or log lines.
package pep
