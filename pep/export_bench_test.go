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
