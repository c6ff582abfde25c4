package dpop

import "hash/maphash"

// markWays is how many keys' marks one bucket of a markTable holds apart.
const markWays = 4

// markTable keeps the marks of keys that hold no proof in a replay cache
// any more (see replayCache): the latest expiry of a proof of the key
// that the ahead part forgot. Its buckets are found by a hash keyed with
// a secret of the table, so no caller can pick keys that land in
// another's. A bucket keeps the marks of markWays keys apart, each with
// the key; a further key's mark takes the place of the bucket's lowest,
// which goes to the bucket's shared mark, refusing every key's proofs
// there no newer. So a key is refused for another key's forgotten proof
// only when more than markWays keys with marks still in force landed in
// its bucket. Marks are only ever raised: a proof the table refused it
// refuses until the mark expires (see get). Not safe for concurrent use:
// the cache's lock guards it.
type markTable struct {
	seed    maphash.Seed
	buckets []markBucket // nil until the first mark; a power of two of them
	n       int          // len(buckets) once allocated
	max     int64        // the latest mark
}

// markBucket is one bucket of a markTable: markWays keys' marks, and the
// mark shared by every key of the bucket.
type markBucket struct {
	keys   [markWays]ownerKey
	marks  [markWays]int64 // 0: the way is free
	shared int64
}

// newMarkTable returns an empty table of buckets enough that the keys of
// about size marks rarely share one: size/8 (at least 256) rounded up to
// a power of two, 72 bytes each, allocated with the first mark.
func newMarkTable(size int) markTable {
	n := 256
	for n < size/8 && n < 1<<22 {
		n <<= 1
	}
	return markTable{seed: maphash.MakeSeed(), n: n}
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
// took the way from (0 if none), for the cache's purged watermark; a way
// taken from a key whose mark is in force raises the bucket's shared mark
// to it.
func (t *markTable) raise(id ownerKey, m, now int64) (expired int64) {
	if t.buckets == nil {
		t.buckets = make([]markBucket, t.n)
	}
	t.max = max(t.max, m)
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
	if b.marks[low] >= now {
		b.shared = max(b.shared, b.marks[low])
	} else {
		expired = b.marks[low]
	}
	b.keys[low], b.marks[low] = id, m
	return expired
}
