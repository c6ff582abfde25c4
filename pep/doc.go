// Package pep is the policy enforcement point of orgauthz: a client that asks
// the Organization and Authorization Service's gateway whether a caller may
// use a scope on a resource, and that fails closed.
//
//	c, err := pep.New("https://gateway.example.com", "acme", "orders-api")
//	if err != nil { ... }
//	c.SetToken(accessToken)
//	d, err := c.Check(ctx, "orders", "read")
//	if err != nil { ... }          // no token, a refused call, or the gateway refused the token (401)
//	if !d.Allowed() { ... deny }   // d.Cause says why when the client failed closed
//
// # Failing closed
//
// Decision.Allowed and Result.Allowed are true only for an explicit GRANT
// that the gateway returned for exactly that pair, in the one entry of its
// answer that names exactly that resource and scope, in a 200 answer that
// was read completely and strictly. The decision for a pair is made in one
// place, from that pair's own entry: no other pair's answer can stand in
// for it. Every other outcome is a DENY: the gateway unreachable or too
// slow, a 5xx after retries, a 400 or 403, a redirect, a body that does not
// parse, exceeds 1 MiB, names a member twice or in another case, or has a
// value of the wrong type, a pair missing from the answer or listed twice,
// an open circuit breaker, the client's own token replaced or cleared while
// the call was under way (ErrTokenChanged: no retry goes out with the old
// token and no answer to it is used or cached). These denials carry a Cause
// (errors.Is(cause, ErrUnavailable) for transport failures, timeouts and the
// breaker; a *ResponseError for gateway answers) and come with a nil error.
//
// Errors are returned, with DENY decisions, for what is not the gateway's
// verdict on the pairs: a call the client refuses to send
// (ErrInvalidArgument: an empty name, or the wildcard resource "*" outside
// ListGranted), a missing token (ErrNoToken), and a 401: ErrUnauthorized,
// which purges the token's cached decisions and emits tokenExpired for the
// client's own current token, or ErrProofRejected when the gateway blames
// the DPoP proof rather than the token (a rejected proof, or a nonce still
// owed after the one resend, in the DPoP challenge or, when that names no
// error, in the JSON body), which purges and emits nothing. A DPoP token
// is retired only on an explicit verdict against it: a DPoP challenge
// saying invalid_token, or a 401 with no DPoP signal at all.
//
// No call returns later than its own deadline (its context's, else the
// client's timeout) plus a few milliseconds, whatever the callers it shares
// a gateway request with do. A token never appears in an error or a log
// line: transport failures are described in fixed words, and text from the
// gateway that holds 8 or more consecutive characters of the token
// (escaped or not, in any case) or a long opaque run is withheld whole; at
// most 7 characters of the token can show.
//
// # Transport
//
// Requests pass three http.RoundTripper layers: retries (connection errors,
// 429, 502, 503 and 504 only, exponential backoff with jitter, Retry-After
// honoured, never past the call's deadline), then the token layer (which
// clones each attempt and sets its Authorization header, and for DPoP a new
// proof), then the base transport (the Transport of the *http.Client given
// with WithHTTPClient, which is never modified, or the client's default).
// The request's credential is bound into the chain, as golang.org/x/oauth2
// binds its token source. Redirects are never followed and cookies never
// kept. The circuit breaker opens only on signs that the gateway itself is
// unwell.
//
// # Caching, batching, coalescing
//
// Gateway GRANT and DENY answers are cached per token, resource, scope and
// request context; two tokens never share an entry. The cache is bounded in
// entries and in bytes (WithCacheMaxBytes), and no caller chooses what an
// entry costs. CheckMany answers cached pairs locally and sends the rest in
// batches, several at a time; a cached answer is good as of the call's
// return, not of its first reading, so the cached pairs of a call that
// waited for the gateway are read again when it is done, and those that
// expired or were purged meanwhile are asked again. Identical concurrent requests share one
// gateway request, which each caller waits for only until its own deadline.
// SetToken, ClearToken and a 401 purge that token's entries, and only
// those; Purge and PurgeAll purge on demand. Replicas of a service share
// their purges with WithInvalidator (redisstore.NewInvalidator): a 401 or a
// Purge on one reaches every one, and a replica serves its cache only while
// the channel's heartbeat is fresh, so that no purge is outrun by a
// channel that is down or slow, or by a freeze.
//
// # Tokens and events
//
// The client's token is set with SetToken (Bearer) or SetDPoPToken (DPoP,
// RFC 9449: every attempt carries a fresh proof, the DPoP-Nonce of the
// gateway's latest answer, whatever its status, is used, and a
// use_dpop_nonce challenge is answered once) and
// removed with ClearToken; a per-call Bearer token can be given with
// WithToken. Token lifecycle events (package events) are delivered to
// handlers registered with WithEventHandler or Subscribe, in the order they
// happened.
//
// A Client is safe for concurrent use.
package pep
