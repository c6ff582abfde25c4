package pep

import "context"

// tokenKey is the context key of WithToken.
type tokenKey struct{}

// WithToken returns a copy of ctx that makes Check, CheckMany, ListGranted
// and Organizations calls made with it send token as a Bearer token instead
// of the client's own token; the middleware forwards each caller's token
// this way. An empty token does not fall back to the client's token: the
// call fails with ErrNoToken. Decisions for different tokens are cached and
// coalesced separately. A 401 for a per-call token purges its cached
// decisions but emits no event, since the client's own token is unaffected.
func WithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}
