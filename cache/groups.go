package cache

// Holds reports whether the cache keeps group g: it has entries, or a pin
// or a writer holds it. A group it does not keep has no entries.
func (c *Cache[G, K, V]) Holds(g G) bool {
	return c.Lookup(g) != c.none
}
