package pep

// Benchmark seams, visible only to this package's tests.

// CacheKey is the key type of the client's decision cache, so that a
// benchmark can compare a cached Check with a bare golang-lru lookup on the
// very same key.
type CacheKey = cacheKey

// NewCacheKey returns the key a cached Check of (resource, scope) with the
// Bearer token and no request context looks up.
func NewCacheKey(token, resource, scope string) CacheKey {
	return cacheKey{id: tokenIdent{scheme: schemeBearer, token: token}, resource: resource, scope: scope, context: noContext}
}
