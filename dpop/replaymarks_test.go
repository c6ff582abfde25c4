package dpop

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMarkTableKeepsKeysApart: the table of marks of keys that hold no
// proof keeps each key's mark with the key, so another key landing in
// the same bucket is not refused for it; past markWays keys with marks
// in force in one bucket, the one it makes way for is still refused (its
// mark goes to the bucket's shared mark: a forgotten proof's replay is
// never accepted), at the cost of the bucket's other keys' proofs no
// newer. A mark that expired makes way without costing anyone, and is
// returned for the purged watermark.
func TestMarkTableKeepsKeysApart(t *testing.T) {
	t.Parallel()
	tab := newMarkTable(0)
	tab.buckets = make([]markBucket, tab.n)
	// Keys of one bucket, found by trying: the hash is keyed at random.
	var keys []ownerKey
	for id := ownerKey(2); len(keys) < markWays+2 && id < 1<<20; id++ {
		if tab.bucket(id) == tab.bucket(ownerKey(2)) {
			keys = append(keys, id)
		}
	}
	require.Len(t, keys, markWays+2)
	const now = 1000
	for i, id := range keys[:markWays] {
		require.Zero(t, tab.raise(id, now+10+int64(i), now))
	}
	for i, id := range keys[:markWays] {
		require.Equal(t, int64(now+10+i), tab.get(id), "each key's own mark")
	}
	require.Zero(t, tab.get(keys[markWays]), "another key of the bucket is not refused for theirs")

	require.Zero(t, tab.raise(keys[markWays], now+20, now))
	require.Equal(t, int64(now+10), tab.get(keys[0]), "the key it made way for is still refused, by the shared mark")
	require.Equal(t, int64(now+10), tab.get(keys[markWays+1]), "and so are the bucket's other keys' proofs no newer")
	require.Equal(t, int64(now+20), tab.get(keys[markWays]))

	// Later, the marks below the clock have expired: a way is free again.
	later := int64(now + 12)
	require.Equal(t, int64(now+11), tab.raise(keys[markWays+1], now+30, later), "the expired mark it took the way of")
	require.Equal(t, int64(now+30), tab.get(keys[markWays+1]))
	require.Equal(t, int64(now+20), tab.get(keys[markWays]))
}
