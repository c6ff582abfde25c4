package pep

// Benchmark seams, visible only to this package's tests.

// CacheKey has the shape of the key under which the client's decision cache
// stores one entry (its token, then the pair and request context), so that
// a benchmark can compare a cached Check with a bare golang-lru lookup on
// the very same key shape.
type CacheKey struct {
	id  tokenIdent
	key cacheKey
}

// NewCacheKey returns the key a cached Check of (resource, scope) with the
// Bearer token and no request context looks up.
func NewCacheKey(token, resource, scope string) CacheKey {
	return CacheKey{
		id:  tokenIdent{Scheme: schemeBearer, Token: token},
		key: cacheKey(appendKey(nil, pair{resource: resource, scope: scope}, "")),
	}
}

// FieldsKey is the key shape the client used before its key became one
// string: the token, then the resource, scope and context as fields. The
// benchmark keeps a map of it as a second baseline.
type FieldsKey struct {
	id                       tokenIdent
	resource, scope, context string
}

// NewFieldsKey returns the FieldsKey of (resource, scope) with the Bearer
// token and no request context.
func NewFieldsKey(token, resource, scope string) FieldsKey {
	return FieldsKey{id: tokenIdent{Scheme: schemeBearer, Token: token}, resource: resource, scope: scope, context: ""}
}
