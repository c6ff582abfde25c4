// Package cache is a generic, bounded cache whose entries each carry their
// own expiry and size, and belong to a group.
//
// A group of one entry, the commonest in a cache of many tokens (a
// decision or two per token), keeps it in the group itself: a hit by group
// value hashes the value, finds the group's handle in the cache's table of
// groups (comparing the value whole) and compares the entry's key, and a
// hit through a [Group] handle, from [Cache.Pin] or [Cache.Lookup], has the
// handle already. The entries of larger groups are found through one index
// of the whole cache: a hit hashes the key from the group's hash, probes the
// index once, and compares the entry's group (the handle itself) and key
// whole. Either way no hash collision ever serves one group's or key's
// value for another's. The cache keeps its own copy of a string key in the
// entry's own allocation, and of the strings of a group value (a token) in
// the group's, so that a hit finds those bytes beside what it has just
// loaded rather than behind one more pointer. An entry holds no links to
// other entries (its places in the recency order and among its group's
// members are numbers): an entry of a bool value under a key of up to 24
// bytes takes 80 bytes, its key's included, and its place in the
// recency ring 8 to 10 more.
// Readers take no lock (writers publish the index and a group's entry with
// atomic stores), so
// hits on different cores do not contend on any lock word, and a group
// value that holds a long token is hashed once per handle, not once per
// lookup. Eviction is least recently used, in the CLOCK approximation: a
// hit only marks its entry, and a marked entry at the old end gets a
// second chance instead of being evicted, up to 64 second chances an
// addition (so that an addition to a cache whose entries were all read
// lately does not walk them all): past them, the oldest entry goes, read
// or not. (golang-lru's lists move an entry to the front on every hit,
// under one lock for all cores.)
//
// The cache is bounded in entries and, with [WithMaxBytes], in bytes: each
// entry counts the size its caller gives plus the cache's own bookkeeping
// (its copies of a string key and of its group's strings included, each
// allocation as the Go runtime rounds it, and each group once however many
// entries it has), so whatever callers store, it never holds much more
// than its bound. Every string it stores is its own copy or the empty
// constant "", never a view of the caller's memory. Every
// entry stores its deadline; an expired entry is dropped when it is
// next looked up, and every miss and addition also drops a few expired
// entries from the old end, so entries nobody asks for again do not stay
// resident. [Cache.RemoveGroup] drops one group's entries in time
// proportional to their number, making them invisible at once and freeing
// them a batch at a time, and a [Writer] drops what it would store after
// such a removal, so that an answer fetched before a group was removed
// never comes back after it; the time to live of what a Writer stores
// counts from when the writer was made, before the fetch, so that an answer
// is never kept longer than its time to live after it was asked for.
// Values are kept in the order they were asked for, not the order they
// arrive in: a Writer's value never replaces one asked for after the
// writer was made, and is not stored at all when a value under its key
// asked for after it has left the cache (not kept, with a ttl that is not
// positive, or evicted, expired or removed; the group remembers such keys
// while a writer made before is open), so that a slow answer to an older
// request never stands in for a newer one. The order is that of the calls
// to Writer and Add, not of clock readings. A
// Cache needs no Close: it starts no goroutine and no timer.
//
// Every lookup reads the clock and compares it with its entry's expiry:
// no entry is served past its time to live, however long the process was
// frozen (SIGSTOP, a frozen container) or starved, since nothing that may
// be stale stands in for the clock. The real clock is read as the time
// since the cache's creation on the monotonic clock alone (the runtime's
// nanotime), which keeps counting while the process is frozen and which
// changes of the wall clock do not move. It is the machine's clock, so it
// stops when the whole machine does: while Linux is suspended, or a
// virtual machine is paused with its clock (QEMU's stop and cont), time
// to live does not pass, and after the resume an entry is served for what
// was left of its time to live then, no longer. Where a machine may be
// suspended with decisions cached, call PurgeAll when it resumes. This
// reading is the
// largest part of a hit's cost on the benchmark machine (BenchmarkHitParts). An injectable clock
// ([WithClock]) replaces it, so that tests can move time without sleeping.
// A cache hit allocates nothing.
package cache
