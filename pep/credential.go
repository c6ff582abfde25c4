package pep

import (
	"context"
	"net/http"

	"github.com/orgauthz/orgauthz/cache"
)

// scheme is the HTTP authorization scheme a token is sent with.
type scheme uint8

const (
	schemeBearer scheme = iota + 1
	schemeDPoP
)

// String returns the scheme as written in an Authorization header and in
// events.Event.TokenType.
func (s scheme) String() string {
	switch s {
	case schemeBearer:
		return "Bearer"
	case schemeDPoP:
		return "DPoP"
	}
	return ""
}

// tokenIdent identifies a token for caching and coalescing: the full token
// string and its scheme, compared exactly, so that two tokens never share a
// cache entry or a gateway request however their hashes fall.
type tokenIdent struct {
	scheme scheme
	token  string
}

// credential attaches a token to one outgoing attempt. authorize is called
// on a clone of the request for every attempt, retries included, so that a
// proof-of-possession credential (DPoP) can make a fresh proof each time;
// nonce is the latest DPoP-Nonce of the request's origin, "" if none.
// usable reports, before anything is sent, why the credential cannot work.
type credential interface {
	ident() tokenIdent
	usable() error
	authorize(r *http.Request, nonce string) error
}

// bearer is an RFC 6750 bearer token with its Authorization header value,
// made once rather than for every attempt.
type bearer struct{ token, header string }

func newBearer(token string) *bearer { return &bearer{token: token, header: "Bearer " + token} }

func (b *bearer) ident() tokenIdent { return tokenIdent{scheme: schemeBearer, token: b.token} }

func (b *bearer) usable() error { return nil }

func (b *bearer) authorize(r *http.Request, _ string) error {
	r.Header.Set("Authorization", b.header)
	return nil
}

// tokenState is the client's current token. A new one is made by every
// SetToken, so that expired marks exactly one token's lifetime.
type tokenState struct {
	cred credential
	id   tokenIdent
	// group is the token's pinned handle in the decision cache (nil
	// without one), unpinned when the token is replaced.
	group *cache.Group[tokenIdent, cacheKey, Status]
	// expired is set, under the client's tokenMu, by the first 401 for
	// this token: it makes tokenExpired fire once, however many calls the
	// gateway refuses.
	expired bool
}

// validToken reports whether token can be sent in an Authorization header:
// non-empty visible ASCII without spaces (RFC 6750's token68 is a subset).
func validToken(token string) bool {
	if token == "" {
		return false
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return false
		}
	}
	return true
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
