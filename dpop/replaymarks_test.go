package dpop

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/require"
)

// bucketKeys returns count keys that land in one bucket of tab when it has
// n buckets; with split, half of them (rounded down) land in one bucket
// and the rest in another once it has 2n. The hash is keyed at random,
// so they are found by trying.
func bucketKeys(t *testing.T, tab *markTable, n, count int, split bool) []ownerKey {
	t.Helper()
	idx := func(id ownerKey, n int) uint64 { return maphash.Comparable(tab.seed, id) & uint64(n-1) }
	var keys []ownerKey
	same := 0
	for id := ownerKey(2); len(keys) < count && id < 1<<24; id++ {
		if idx(id, n) != idx(ownerKey(2), n) {
			continue
		}
		switch {
		case !split:
		case idx(id, 2*n) == idx(ownerKey(2), 2*n):
			if same == count/2 {
				continue
			}
			same++
		case len(keys)-same == count-count/2:
			continue
		}
		keys = append(keys, id)
	}
	require.Len(t, keys, count)
	return keys
}

// TestMarkTableKeepsKeysApart: the table of marks of keys that hold no
// proof keeps each key's mark with the key, so another key landing in
// the same bucket is not refused for it; past markWays keys with marks
// in force in one bucket of the table at its largest, the one it makes
// way for is still refused (its mark goes to the bucket's shared mark: a
// forgotten proof's replay is never accepted), at the cost of the
// bucket's other keys' proofs no newer. A mark that expired makes way
// without costing anyone, and is returned for the purged watermark.
func TestMarkTableKeepsKeysApart(t *testing.T) {
	t.Parallel()
	tab := newMarkTable(0)
	keys := bucketKeys(t, &tab, tab.limit, markWays+2, false) // one bucket however large the table
	const now = 1000
	for i, id := range keys[:markWays] {
		require.Zero(t, tab.raise(id, now+10+int64(i), now))
	}
	for i, id := range keys[:markWays] {
		require.Equal(t, int64(now+10+i), tab.get(id), "each key's own mark")
	}
	require.Zero(t, tab.get(keys[markWays]), "another key of the bucket is not refused for theirs")

	require.Zero(t, tab.raise(keys[markWays], now+100, now))
	require.Equal(t, tab.limit, tab.n, "the table grew to its bound before any key shared a mark")
	require.Equal(t, int64(now+10), tab.get(keys[0]), "the key it made way for is still refused, by the shared mark")
	require.Equal(t, int64(now+10), tab.get(keys[markWays+1]), "and so are the bucket's other keys' proofs no newer")
	require.Equal(t, int64(now+100), tab.get(keys[markWays]))

	// Later, the marks below the clock have expired: a way is free again.
	later := int64(now + 12)
	require.Equal(t, int64(now+11), tab.raise(keys[markWays+1], now+200, later), "the expired mark it took the way of")
	require.Equal(t, int64(now+200), tab.get(keys[markWays+1]))
	require.Equal(t, int64(now+100), tab.get(keys[markWays]))

	tab.reset()
	require.Equal(t, tab.base, tab.n, "dropped, it starts again at its first size")
	require.Zero(t, tab.get(keys[0]))
}

// TestMarkTableGrowsBeforeKeysShareAMark: when a key's mark finds every
// way of its bucket held by marks in force, the table doubles its
// buckets, which spreads the bucket's keys over two, rather than have
// the bucket's keys share a mark: no key is refused for another's
// forgotten proof, and every key is still refused for its own. The table
// used to move the bucket's lowest mark to a mark shared by its keys at
// once, so a flood of proofs dated ahead of fresh keys (some thousands a
// second at the defaults) had the fresh proofs of every key in a bucket
// refused.
func TestMarkTableGrowsBeforeKeysShareAMark(t *testing.T) {
	t.Parallel()
	tab := newMarkTable(0)
	n := tab.n
	keys := bucketKeys(t, &tab, n, markWays+2, true)
	const now = 1000
	for i, id := range keys[:markWays+1] { // one more than the bucket holds
		require.Zero(t, tab.raise(id, now+10+int64(i), now))
	}
	require.Zero(t, tab.get(keys[markWays+1]), "a key of the bucket that has no mark is refused for none")
	for i, id := range keys[:markWays+1] {
		require.Equal(t, int64(now+10+i), tab.get(id), "each key is refused for its own mark")
	}
	require.Equal(t, 2*n, tab.n, "the table doubled")
}
