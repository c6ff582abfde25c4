package cache

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache is a bounded LRU map from K to V with a time to live per entry. It is
// safe for concurrent use. Create it with [New]; the zero value is not usable.
type Cache[K comparable, V any] struct {
	lru *lru.Cache[K, entry[V]]
	now func() time.Time

	hits, misses, evictions, expirations atomic.Uint64
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// Stats is a snapshot of a cache's counters, which only grow.
type Stats struct {
	// Hits counts lookups that found a live entry.
	Hits uint64
	// Misses counts lookups that found nothing or an expired entry.
	Misses uint64
	// Evictions counts live entries pushed out to make room for new ones.
	Evictions uint64
	// Expirations counts entries dropped on lookup because they had expired.
	Expirations uint64
}

// Option configures a Cache in [New].
type Option func(*config)

type config struct {
	now func() time.Time
}

// WithClock makes the cache read the time from now instead of time.Now. now
// must be safe for concurrent use. A nil now is an error in New.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// New returns an empty cache holding at most size entries; adding to a full
// cache evicts the least recently used entry. It returns an error when size
// is not positive or an option is invalid.
func New[K comparable, V any](size int, opts ...Option) (*Cache[K, V], error) {
	cfg := config{now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if size <= 0 {
		return nil, fmt.Errorf("cache: size must be positive, got %d", size)
	}
	if cfg.now == nil {
		return nil, errors.New("cache: WithClock needs a non-nil clock")
	}
	l, err := lru.New[K, entry[V]](size)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache[K, V]{lru: l, now: cfg.now}, nil
}

// Get returns the value stored for key and true when it is present and has
// not expired. It marks the entry as recently used. An expired entry is
// removed and reported as a miss. Get allocates nothing.
func (c *Cache[K, V]) Get(key K) (value V, ok bool) {
	e, ok := c.lru.Get(key)
	if !ok {
		c.misses.Add(1)
		return value, false
	}
	if !c.now().Before(e.expires) {
		// A value stored concurrently under the same key may be removed
		// here too; that costs one miss, never a stale hit.
		c.lru.Remove(key)
		c.expirations.Add(1)
		c.misses.Add(1)
		return value, false
	}
	c.hits.Add(1)
	return e.value, true
}

// Add stores value under key for ttl, replacing any earlier value and making
// it the most recently used entry. When the cache is full the least recently
// used entry is evicted. A ttl that is zero or negative stores nothing and
// removes any earlier value, so that a caller never reads an old answer in
// place of the one it chose not to keep.
func (c *Cache[K, V]) Add(key K, value V, ttl time.Duration) {
	if ttl <= 0 {
		c.lru.Remove(key)
		return
	}
	if c.lru.Add(key, entry[V]{value: value, expires: c.now().Add(ttl)}) {
		c.evictions.Add(1)
	}
}

// Remove deletes the entry for key and reports whether there was one.
func (c *Cache[K, V]) Remove(key K) bool {
	return c.lru.Remove(key)
}

// RemoveFunc deletes every entry, live or expired, for which match returns
// true, and returns how many it deleted. It walks a snapshot of the keys, so
// it costs time and memory proportional to the cache size; entries added
// while it runs may or may not be visited. match must not call back into the
// cache.
func (c *Cache[K, V]) RemoveFunc(match func(key K, value V) bool) int {
	n := 0
	for _, k := range c.lru.Keys() {
		if e, ok := c.lru.Peek(k); ok && match(k, e.value) && c.lru.Remove(k) {
			n++
		}
	}
	return n
}

// Purge deletes every entry. Counters are kept.
func (c *Cache[K, V]) Purge() {
	c.lru.Purge()
}

// Len returns the number of entries, expired ones not yet dropped included.
func (c *Cache[K, V]) Len() int {
	return c.lru.Len()
}

// Stats returns the current counters.
func (c *Cache[K, V]) Stats() Stats {
	return Stats{
		Hits:        c.hits.Load(),
		Misses:      c.misses.Load(),
		Evictions:   c.evictions.Load(),
		Expirations: c.expirations.Load(),
	}
}
