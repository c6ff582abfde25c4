// Package cache is a generic, bounded cache whose entries each carry their
// own expiry and size, and belong to a group.
//
// Entries are found through their group: a [Group] handle (from
// [Cache.Pin] or [Cache.Lookup]) reads a group's entries without taking a
// lock (writers publish the group's hash table with atomic stores), so hits
// on different cores do not contend on any lock word, and a group value
// that holds a long token is hashed once per handle, not once per lookup. Eviction is least recently used, in the CLOCK
// approximation: a hit only marks its entry, and a marked entry at the old
// end gets a second chance instead of being evicted. (golang-lru's lists
// move an entry to the front on every hit, under one lock for all cores.)
//
// The cache is bounded in entries and, with [WithMaxBytes], in bytes: each
// entry counts the size its caller gives plus the cache's own bookkeeping,
// so whatever callers store, it never holds much more than its bound.
// Every entry stores its deadline; an expired entry is dropped when it is
// next looked up, and every miss and addition also drops a few expired
// entries from the old end, so entries nobody asks for again do not stay
// resident. [Cache.RemoveGroup] drops one group's entries in time
// proportional to their number, making them invisible at once and freeing
// them a batch at a time, and a [Writer] drops what it would store after
// such a removal, so that an answer fetched before a group was removed
// never comes back after it. A Cache needs no Close: it starts no
// goroutine of its own but its clock's timer, which stops when the cache
// is idle.
//
// A hit reads the clock only near an entry's expiry: while the cache is in
// use, a timer advances a coarse clock every millisecond, and a hit trusts it
// for an entry that expires more than a margin after it (one second, or four
// times the latest the timer was ever seen to run, if that is more). Closer
// to its expiry, and for additions and misses, the cache reads the clock
// itself, so a busy machine whose timer runs late cannot make an entry
// outlive its time to live. An idle cache has no timer. An injectable clock
// ([WithClock]) replaces all of this, so that tests can move time without
// sleeping. A cache hit allocates nothing.
package cache
