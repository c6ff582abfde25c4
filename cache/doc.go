// Package cache is a generic, bounded, least-recently-used cache whose
// entries each carry their own expiry and size, and belong to a group.
//
// It is built on golang-lru/v2's simplelru under one mutex of its own, which
// also guards the counters (not on its expirable package, which starts a
// goroutine that cannot be stopped). The cache is bounded in entries and,
// with [WithMaxBytes], in bytes: whatever the caller stores, it never holds
// more. Every entry stores its deadline; an expired entry is dropped when it
// is next looked up, and every miss and addition also drops a few expired
// entries from the least recently used end, so entries nobody asks for again
// do not stay resident. A [Cache] starts no goroutines and needs no Close.
//
// Entries are stored under a group and a key. [Cache.RemoveGroup] drops one
// group's entries in time proportional to their number, and a [Writer]
// drops what it would store after such a removal, so that an answer fetched
// before a group was removed never comes back after it.
//
// Time comes from an injectable clock ([WithClock]) so that tests can move it
// without sleeping. A cache hit allocates nothing.
package cache
