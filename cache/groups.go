package cache

import (
	"math"
	"time"
)

// Holds reports whether the cache keeps group g: it has entries, or a pin
// or a writer holds it. A group it does not keep has no entries.
func (c *Cache[G, K, V]) Holds(g G) bool {
	return c.Lookup(g) != c.none
}

// ServeUntil makes Get serve nothing once the cache's clock, read on each
// lookup, reaches t (a time of the clock WithClock gave, or of time.Now);
// the entries are kept, and additions go on, for when a later call moves
// the horizon. The last call wins. Without it Get serves until entries
// expire. It costs a hit one atomic load: the clock is the one read for
// the entry's expiry.
func (c *Cache[G, K, V]) ServeUntil(t time.Time) {
	c.horizon.Store(int64(t.Sub(c.clk.epoch)))
}

// StopServing makes Get serve nothing until ServeUntil is called.
func (c *Cache[G, K, V]) StopServing() {
	c.horizon.Store(math.MinInt64)
}
