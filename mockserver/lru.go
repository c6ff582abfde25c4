package mockserver

import (
	"fmt"
	"sync"
)

// lru is a map of at most size entries that forgets its least recently
// used entry to make room for a new one. It is safe for concurrent use:
// what only reads (peek, contains, len) shares a read lock, so that hits
// on different cores do not wait for each other; what changes the entries
// or their order (touch, containsOrAdd, removeOldest, removeIf) takes the
// lock alone. It is what the verified-token caches need of an LRU (with
// the semantics of golang-lru's Cache, which it replaces) and no more.
type lru[K comparable, V any] struct {
	mu    sync.RWMutex
	size  int
	items map[K]*lruEntry[K, V]
	// ring holds the entries from the most recently used (ring.next) to
	// the least (ring.prev); empty, it points at itself.
	ring lruEntry[K, V]
}

type lruEntry[K comparable, V any] struct {
	key        K
	value      V
	prev, next *lruEntry[K, V]
}

// newLRU returns an empty lru of at most size entries; size must be at
// least 1.
func newLRU[K comparable, V any](size int) (*lru[K, V], error) {
	if size < 1 {
		return nil, fmt.Errorf("an LRU holds at least one entry, not %d", size)
	}
	l := &lru[K, V]{size: size, items: make(map[K]*lruEntry[K, V])}
	l.ring.prev, l.ring.next = &l.ring, &l.ring
	return l, nil
}

// peek returns k's value without marking it used.
func (l *lru[K, V]) peek(k K) (V, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if e, ok := l.items[k]; ok {
		return e.value, true
	}
	var zero V
	return zero, false
}

// contains reports whether k has a value, without marking it used.
func (l *lru[K, V]) contains(k K) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, ok := l.items[k]
	return ok
}

// len returns how many entries l holds.
func (l *lru[K, V]) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.items)
}

// touch marks k's entry, if there is one, the most recently used.
func (l *lru[K, V]) touch(k K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[k]; ok {
		l.unlink(e)
		l.pushFront(e)
	}
}

// containsOrAdd adds v under k unless k has a value already (which it
// leaves as it is, unmarked), and reports whether k had one and whether
// adding forgot the least recently used entry to stay within the size.
func (l *lru[K, V]) containsOrAdd(k K, v V) (had, evicted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.items[k]; ok {
		return true, false
	}
	e := &lruEntry[K, V]{key: k, value: v}
	l.items[k] = e
	l.pushFront(e)
	if len(l.items) > l.size {
		l.remove(l.ring.prev)
		return false, true
	}
	return false, false
}

// removeOldest forgets the least recently used entry and reports whether
// there was one.
func (l *lru[K, V]) removeOldest() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == 0 {
		return false
	}
	l.remove(l.ring.prev)
	return true
}

// removeIf forgets k's entry if match reports true of its value, and
// reports whether it did; match runs under the lock, so the entry it saw
// is the entry forgotten.
func (l *lru[K, V]) removeIf(k K, match func(V) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[k]
	if !ok || !match(e.value) {
		return false
	}
	l.remove(e)
	return true
}

// remove takes e out of the entries; l.mu is held.
func (l *lru[K, V]) remove(e *lruEntry[K, V]) {
	l.unlink(e)
	delete(l.items, e.key)
}

// unlink takes e out of the ring; l.mu is held.
func (l *lru[K, V]) unlink(e *lruEntry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// pushFront puts e first in the ring; l.mu is held.
func (l *lru[K, V]) pushFront(e *lruEntry[K, V]) {
	e.prev, e.next = &l.ring, l.ring.next
	l.ring.next.prev = e
	l.ring.next = e
}
