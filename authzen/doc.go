// Package authzen is a fail-closed client for any PDP that speaks the
// OpenID AuthZEN Authorization API 1.0: the Access Evaluation API, the
// Access Evaluations API (batches, with the execute_all,
// deny_on_first_deny and permit_on_first_permit semantics), the Search
// APIs (subject, resource, action) and discovery
// through /.well-known/authzen-configuration, or endpoints given with
// WithEndpoints (OpenFGA serves them under /stores/{store_id}).
//
//	c, err := authzen.New("https://pdp.example.com")
//	c.SetToken(pepToken) // the PEP's own credential at the PDP
//	d, err := c.Evaluate(ctx, authzen.Request{
//		Subject:  authzen.Subject{Type: "user", ID: sub},
//		Action:   authzen.Action{Name: "can_read"},
//		Resource: authzen.Resource{Type: "document", ID: "42"},
//	})
//	if !d.Allowed() { ... deny }
//
// It is built on the client core pep is built on (internal/core and
// internal/transport): the same settings and options, token lifecycle and
// events, retries, credential chain (Bearer or DPoP), circuit breaker,
// coalescing of identical requests, body limit, redaction, decision cache
// and counters, and the same sentinel errors (errors.Is(err,
// authzen.ErrUnavailable) and pep.ErrUnavailable are one test), which its
// errors say in its own name ("authzen: circuit breaker open").
//
// # Failing closed
//
// Decision.Allowed is true only for "decision": true that the PDP returned
// for exactly that evaluation (a batch item is read from the answer's
// entry at its own position) in a 200 answer that was read completely and
// strictly. Everything else denies, with a Cause and a nil error: the PDP
// unreachable or too slow, a 5xx after retries, a 400, 403 or 404, a
// redirect, a body over 1 MiB, a member named twice or in another case, a
// decision that is not a JSON boolean, trailing data, an item whose context
// carries an "error" (ErrEvaluationFailed), an answer with more items than
// asked, or fewer than the semantic allows, items the PDP did not reach
// (ErrNotEvaluated), an open breaker, unusable metadata (ErrDiscovery),
// the credential replaced or cleared while the call was under way
// (ErrTokenChanged: no retry goes out with it, no answer to it is used or
// cached).
// A 401 is returned as an error (ErrUnauthorized), purges the credential's
// cached decisions and emits tokenExpired once, unless it blames a DPoP
// proof rather than the token (ErrProofRejected, see there: nothing is
// purged or emitted); a missing credential is ErrNoToken and sends
// nothing. A client made WithoutCredentials sent no
// credential to refuse: its 401 is only the call's error (ErrUnauthorized),
// with no purge and no event.
//
// Decisions are cached per credential and canonical request (subject,
// action, resource, context, with their properties); two credentials never
// share an entry. Each request carries a fresh X-Request-ID.
//
// # Searches
//
// SearchSubject, SearchResource and SearchAction call the Search APIs and
// follow the PDP's pages (page.next_token) to the end, within bounds
// (MaxSearchPages, WithMaxResults, MaxSearchBytes; a repeated page token
// is an error, never a loop). A search is not a decision: its results
// grant nothing by themselves, and a PEP enforcing access must still
// Evaluate. It cannot fail closed with a denial either, so any fault is an
// error and no results at all, never the pages read before it. Pages are
// read as strictly as decisions, through the same credential, retries,
// breaker and redaction; results are not cached.
//
// A Client is safe for concurrent use.
package authzen
