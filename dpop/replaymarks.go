package dpop

import "hash/maphash"

// markWays is how many keys' marks one bucket of a markTable holds apart.
const markWays = 16

// markGrowth bounds how far a markTable grows: to markGrowth times the
// buckets it starts with.
const markGrowth = 8

// markTable keeps the marks of keys that hold no proof in a replay cache
// any more (see replayCache): the latest expiry of a proof of the key
// that the ahead part forgot. Its buckets are found by a hash keyed with
// a secret of the table, so no caller can pick keys that land in
// another's. A bucket keeps the marks of markWays keys apart, each with
// the key. A further key's mark takes a way whose mark expired; when every
// way of its bucket holds a mark still in force, the table doubles its
// buckets (up to markGrowth times those it starts with), which spreads
// each bucket's keys over two, until one has room. Only a table at its
// bound makes room by moving the bucket's lowest mark to the bucket's
// shared mark, which refuses every key's proofs there no newer. So a key
// is refused for another key's forgotten proof only when more than
// markWays keys with marks still in force land in its bucket of the
// largest table. Marks are only ever raised: a proof the table refused it
// refuses until the mark expires (see get). Once every mark expired, the
// table is dropped (reset) and starts again at its first size. Not safe
// for concurrent use: the cache's lock guards it.
type markTable struct {
	seed    maphash.Seed
	buckets []markBucket // nil until the first mark; a power of two of them
	n       int          // len(buckets) once allocated, else base
	base    int          // the buckets it starts with
	limit   int          // the most buckets it grows to
	max     int64        // the latest mark
}

// markBucket is one bucket of a markTable: markWays keys' marks, and the
// mark shared by every key of the bucket.
type markBucket struct {
	keys   [markWays]ownerKey
	marks  [markWays]int64 // 0: the way is free
	shared int64
}

// newMarkTable returns an empty table of buckets enough for about size/2
// marks (at least 1,024), a power of two of them, 8*(2*markWays+1) bytes
// each, allocated with the first mark; it grows to markGrowth times that.
func newMarkTable(size int) markTable {
	n := 1024 / markWays
	for n*markWays < size/2 && n < 1<<22 {
		n <<= 1
	}
	return markTable{seed: maphash.MakeSeed(), n: n, base: n, limit: n * markGrowth}
}

func (t *markTable) bucket(id ownerKey) *markBucket {
	return &t.buckets[maphash.Comparable(t.seed, id)&uint64(t.n-1)]
}

// get returns id's mark: the latest expiry of a forgotten proof a proof
// of id may be the replay of (0 if none).
func (t *markTable) get(id ownerKey) int64 {
	if t.buckets == nil {
		return 0
	}
	b := t.bucket(id)
	m := b.shared
	for i, k := range b.keys {
		if k == id && b.marks[i] > m {
			m = b.marks[i]
		}
	}
	return m
}

// raise raises id's mark to m. A way whose mark is below now (its proofs
// expired by the cache's clock) is free, and raise returns the mark it
// took the way from (0 if none), for the cache's purged watermark. With
// no way free, the table grows; at its bound, a way taken from a key whose
// mark is in force raises the bucket's shared mark to it.
func (t *markTable) raise(id ownerKey, m, now int64) (expired int64) {
	if t.buckets == nil {
		t.buckets = make([]markBucket, t.n)
	}
	t.max = max(t.max, m)
	for {
		b := t.bucket(id)
		low := 0
		for i, k := range b.keys {
			if k == id && b.marks[i] != 0 {
				b.marks[i] = max(b.marks[i], m)
				return 0
			}
			if b.marks[i] < b.marks[low] {
				low = i
			}
		}
		switch {
		case b.marks[low] < now:
			expired = b.marks[low]
		case t.n < t.limit:
			t.grow()
			continue
		default:
			b.shared = max(b.shared, b.marks[low])
		}
		b.keys[low], b.marks[low] = id, m
		return expired
	}
}

// grow doubles the table's buckets: bucket i's keys go to buckets i and
// i+n of the new table, by one more bit of their hash, and both keep its
// shared mark.
func (t *markTable) grow() {
	old := t.buckets
	t.n *= 2
	t.buckets = make([]markBucket, t.n)
	for i := range old {
		ob := &old[i]
		t.buckets[i].shared, t.buckets[i+len(old)].shared = ob.shared, ob.shared
		for j, k := range ob.keys {
			if ob.marks[j] == 0 {
				continue
			}
			b := t.bucket(k)
			for w := range b.marks {
				if b.marks[w] == 0 {
					b.keys[w], b.marks[w] = k, ob.marks[j]
					break
				}
			}
		}
	}
}

// reset drops the table, its marks all expired, back to its first size.
func (t *markTable) reset() {
	t.buckets, t.n, t.max = nil, t.base, 0
}
