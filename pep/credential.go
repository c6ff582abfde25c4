package pep

import (
	"context"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// The credential machinery is internal/transport's; these names keep pep's
// code short.
type (
	scheme     = transport.Scheme
	tokenIdent = transport.Ident
	credential = transport.Credential
)

const (
	schemeBearer = transport.SchemeBearer
	schemeDPoP   = transport.SchemeDPoP
)

// tokenState is the client's current token. A new one is made by every
// SetToken, so that expired marks exactly one token's lifetime.
type tokenState struct {
	// cred is released (before the purge) when the token is replaced or
	// cleared, which stops the calls still using it (ErrTokenChanged).
	cred *transport.Held
	id   tokenIdent
	// unusable is why the token cannot be sent (transport.CheckToken:
	// characters a header cannot carry, or longer than WithMaxTokenBytes),
	// found once by SetToken rather than on every call; nil when it can.
	unusable error
	// group is the token's pinned handle in the decision cache (nil
	// without one), unpinned when the token is replaced.
	group *tokenEntries
	// expired is set, under the client's tokenMu, by the first 401 for
	// this token: it makes tokenExpired fire once, however many calls the
	// gateway refuses.
	expired bool
}

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
