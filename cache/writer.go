package cache

import "time"

// Writer adds entries to one group unless the group is removed after the
// writer was made: a value fetched before a removal never comes back after
// it. The time to live of what it adds counts from when it was made, so
// that a value is never kept longer than its time to live after it was
// asked for, however long the fetch took or the process stalled before
// storing it. Make one with [Cache.Writer] just before fetching, and Close
// it when done. A Writer is not safe for concurrent use.
type Writer[G, K comparable, V any] struct {
	grp    *Group[G, K, V]
	gen    uint64
	made   time.Duration // since the cache's epoch
	closed bool
}

// Writer returns a writer for group g, made now: the time to live of what
// it adds counts from this call. Until it is closed, the cache keeps g's
// bookkeeping even when g has no entries.
func (c *Cache[G, K, V]) Writer(g G) *Writer[G, K, V] {
	made := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	grp := c.group(g)
	grp.holds++
	return &Writer[G, K, V]{grp: grp, gen: grp.gen.Load(), made: made}
}

// Add is Cache.Add for the writer's group, except that ttl counts from when
// the writer was made, not from this call, and that it stores nothing, and
// reports false, once the group has been removed since the writer was made,
// or after Close. A ttl that has run out already stores nothing and removes
// any earlier value, as a ttl that is not positive does.
func (w *Writer[G, K, V]) Add(k K, value V, ttl time.Duration, size int64) bool {
	if w.closed {
		return false
	}
	c := w.grp.c
	now := c.clk.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.grp.gen.Load() != w.gen {
		return false
	}
	return c.add(w.grp, k, value, now, expiry(w.made, ttl), size)
}

// Close releases the writer. Closing it again does nothing.
func (w *Writer[G, K, V]) Close() {
	if w.closed {
		return
	}
	w.closed = true
	c := w.grp.c
	c.mu.Lock()
	defer c.mu.Unlock()
	w.grp.holds--
	c.release(w.grp)
}
