// Package cache is a generic, bounded, least-recently-used cache whose
// entries each carry their own expiry.
//
// It is built on golang-lru/v2's simplelru under one mutex of its own, which
// also guards the counters (not on its expirable package, which starts a
// goroutine that cannot be stopped): every entry stores its deadline
// and an expired entry is dropped when it is next looked up, or pushed out by
// newer entries. A [Cache] starts no goroutines and needs no Close.
//
// Time comes from an injectable clock ([WithClock]) so that tests can move it
// without sleeping. A cache hit allocates nothing.
package cache
