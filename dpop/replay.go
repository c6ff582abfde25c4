package dpop

import (
	"crypto/sha256"
	"sync"
	"time"
)

// replayKey identifies one accepted proof: the first 16 bytes of
// SHA-256(jkt || 0 || jti). Hashing bounds the memory per entry whatever the
// client puts in jti; 128 bits keep accidental collisions negligible (and a
// collision could only reject a proof, never accept one).
type replayKey [16]byte

func newReplayKey(jkt, jti string) replayKey {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var sum [sha256.Size]byte
	var k replayKey
	copy(k[:], h.Sum(sum[:0]))
	return k
}

type replayEntry struct {
	expires int64 // unix nanoseconds after which the proof is too old anyway
	key     replayKey
}

// replayCache remembers accepted proofs until they would fail the iat check
// anyway, holding at most max entries. It never evicts an unexpired entry:
// when it is full of unexpired entries it refuses new ones (fail closed), so
// a flood of proofs cannot push a recorded proof out and make its replay
// acceptable. Entries are kept in a min-heap by expiry, so purging is
// O(log n) per expired entry and a full cache answers in O(1).
type replayCache struct {
	mu   sync.Mutex
	max  int
	seen map[replayKey]struct{}
	heap []replayEntry
}

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, seen: make(map[replayKey]struct{})}
}

// add records key until expires. It returns ErrReplay if key is recorded and
// unexpired, ErrReplayCacheFull if the cache is full of unexpired entries.
func (c *replayCache) add(key replayKey, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.purge(now.UnixNano())
	if _, ok := c.seen[key]; ok {
		return ErrReplay
	}
	if len(c.heap) >= c.max {
		return ErrReplayCacheFull
	}
	c.seen[key] = struct{}{}
	c.push(replayEntry{expires: expires.UnixNano(), key: key})
	return nil
}

// len returns the number of entries, expired ones included.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.heap)
}

// purge drops every entry that expired before now.
func (c *replayCache) purge(now int64) {
	for len(c.heap) > 0 && c.heap[0].expires < now {
		delete(c.seen, c.heap[0].key)
		c.pop()
	}
}

func (c *replayCache) push(e replayEntry) {
	c.heap = append(c.heap, e)
	i := len(c.heap) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if c.heap[parent].expires <= c.heap[i].expires {
			break
		}
		c.heap[parent], c.heap[i] = c.heap[i], c.heap[parent]
		i = parent
	}
}

func (c *replayCache) pop() {
	n := len(c.heap) - 1
	c.heap[0] = c.heap[n]
	c.heap = c.heap[:n]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < n && c.heap[l].expires < c.heap[small].expires {
			small = l
		}
		if r < n && c.heap[r].expires < c.heap[small].expires {
			small = r
		}
		if small == i {
			break
		}
		c.heap[i], c.heap[small] = c.heap[small], c.heap[i]
		i = small
	}
	// Give memory back after a burst: the map shrinks on its own only when
	// rebuilt, the slice when reallocated.
	if n == 0 && cap(c.heap) > 1024 {
		c.heap = nil
		c.seen = make(map[replayKey]struct{})
	}
}
