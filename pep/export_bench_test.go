package pep

import "github.com/orgauthz/orgauthz/internal/transport"

// Benchmark seams, visible only to this package's tests.

// CacheKey has the shape of the key under which the client's decision cache
// stores one entry (its token, then the pair and request context), so that
// a benchmark can compare a cached Check with a bare LRU lookup on the
// very same key shape.
type CacheKey struct {
	id  transport.Ident
	key string
}

// NewCacheKey returns the key a cached Check of (resource, scope) with the
// Bearer token and no request context looks up.
func NewCacheKey(token, resource, scope string) CacheKey {
	return CacheKey{
		id:  transport.Ident{Scheme: transport.SchemeBearer, Token: token},
		key: string(appendKey(nil, pair{resource: resource, scope: scope}, "")),
	}
}

// FieldsKey is the key shape the client used before its key became one
// string: the token, then the resource, scope and context as fields. The
// benchmark keeps a map of it as a second baseline.
type FieldsKey struct {
	id                       transport.Ident
	resource, scope, context string
}

// NewFieldsKey returns the FieldsKey of (resource, scope) with the Bearer
// token and no request context.
func NewFieldsKey(token, resource, scope string) FieldsKey {
	return FieldsKey{id: transport.Ident{Scheme: transport.SchemeBearer, Token: token}, resource: resource, scope: scope, context: ""}
}
