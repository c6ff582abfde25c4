package cache

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache is a bounded LRU map from K to V with a time to live per entry. It is
// safe for concurrent use. Create it with [New]; the zero value is not usable.
type Cache[K comparable, V any] struct {
	// Expiry times are kept as durations since epoch, the cache's creation.
	// With the real clock (now is nil) the time since epoch reads only the
	// monotonic clock, which costs half as much as time.Now on every Get.
	epoch time.Time
	now   func() time.Time

	// One mutex guards the list and the counters: a lookup takes one lock
	// and no other atomic operation, and an expired entry is dropped in the
	// same critical section that found it.
	mu                                   sync.Mutex
	lru                                  *simplelru.LRU[K, entry[V]]
	hits, misses, evictions, expirations uint64
}

type entry[V any] struct {
	value   V
	expires time.Duration // since the cache's epoch
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
	now      func() time.Time
	clockSet bool
}

// WithClock makes the cache read the time from now instead of time.Now. now
// must be safe for concurrent use. A nil now is an error in New.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now, c.clockSet = now, true }
}

// New returns an empty cache holding at most size entries; adding to a full
// cache evicts the least recently used entry. It returns an error when size
// is not positive or an option is invalid.
func New[K comparable, V any](size int, opts ...Option) (*Cache[K, V], error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if size <= 0 {
		return nil, fmt.Errorf("cache: size must be positive, got %d", size)
	}
	if cfg.clockSet && cfg.now == nil {
		return nil, errors.New("cache: WithClock needs a non-nil clock")
	}
	l, err := simplelru.NewLRU[K, entry[V]](size, nil)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache[K, V]{lru: l, now: cfg.now}
	c.epoch = c.read()
	return c, nil
}

// read returns the time from the cache's clock.
func (c *Cache[K, V]) read() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// elapsed returns the time since the cache's epoch.
func (c *Cache[K, V]) elapsed() time.Duration {
	if c.now == nil {
		return time.Since(c.epoch) // monotonic only
	}
	return c.now().Sub(c.epoch)
}

// Get returns the value stored for key and true when it is present and has
// not expired. It marks the entry as recently used. An expired entry is
// removed and reported as a miss. Get allocates nothing.
func (c *Cache[K, V]) Get(key K) (value V, ok bool) {
	now := c.elapsed() // outside the lock
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	switch {
	case !ok:
		c.misses++
		return value, false
	case now >= e.expires:
		c.lru.Remove(key)
		c.expirations++
		c.misses++
		return value, false
	}
	c.hits++
	return e.value, true
}

// Add stores value under key for ttl, replacing any earlier value and making
// it the most recently used entry. When the cache is full the least recently
// used entry is evicted. A ttl that is zero or negative stores nothing and
// removes any earlier value, so that a caller never reads an old answer in
// place of the one it chose not to keep.
func (c *Cache[K, V]) Add(key K, value V, ttl time.Duration) {
	expires := c.elapsed()
	if expires > math.MaxInt64-ttl {
		expires = math.MaxInt64 // saturate: the entry never expires
	} else {
		expires += ttl
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ttl <= 0 {
		c.lru.Remove(key)
		return
	}
	if c.lru.Add(key, entry[V]{value: value, expires: expires}) {
		c.evictions++
	}
}

// Remove deletes the entry for key and reports whether there was one.
func (c *Cache[K, V]) Remove(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Remove(key)
}

// RemoveFunc deletes every entry, live or expired, for which match returns
// true, and returns how many it deleted. It holds the cache's lock while it
// walks every entry, so it costs time proportional to the cache size and
// other calls wait for it. match must not call back into the cache.
func (c *Cache[K, V]) RemoveFunc(match func(key K, value V) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge()
}

// Len returns the number of entries, expired ones not yet dropped included.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Stats returns the current counters.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Expirations: c.expirations}
}
