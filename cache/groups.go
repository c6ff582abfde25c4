package cache

// RemoveGroups deletes the entries of every group for which match reports
// true, as RemoveGroup does for each, and returns how many entries it
// deleted. match is called once per group the cache holds, with no lock of
// the cache's held (it may be slow: hash the group's value, say); a group
// added meanwhile may be left out. It costs time in proportion to the
// number of groups, plus the entries of those removed.
func (c *Cache[G, K, V]) RemoveGroups(match func(G) bool) int {
	c.mu.RLock()
	ids := make([]G, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	c.mu.RUnlock()
	n := 0
	for _, id := range ids {
		if match(id) {
			n += c.RemoveGroup(id)
		}
	}
	return n
}
