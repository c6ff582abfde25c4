package core

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBatchesRunsEveryChunkAtMostMaxParallelChunksAtATime: in parallel,
// Batches runs every chunk once, MaxParallelChunks of them at a time and
// never more, and returns the error of the first failed chunk in the order
// of the chunks.
func TestBatchesRunsEveryChunkAtMostMaxParallelChunksAtATime(t *testing.T) {
	const batch = 10
	errA, errB := errors.New("chunk 2"), errors.New("chunk 5")
	for _, tc := range []struct {
		name string
		n    int
		fail map[int]error // chunk index -> its error
		want error
	}{
		{"exact chunks", 12 * batch, nil, nil},
		{"short last chunk", 12*batch + 3, nil, nil},
		{"first failed chunk in order", 12 * batch, map[int]error{2: errA, 5: errB}, errA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Core{batch: batch}
			var mu sync.Mutex
			seen := map[int][]int{} // start -> the end of each of its runs
			var running, peak atomic.Int32
			full := make(chan struct{}) // closed once MaxParallelChunks run at once
			var once sync.Once
			err := c.Batches(tc.n, false, func(start, end int) (bool, error) {
				now := running.Add(1)
				defer running.Add(-1)
				raise(&peak, now)
				if now == MaxParallelChunks {
					once.Do(func() { close(full) })
				}
				// Every chunk waits until MaxParallelChunks ran at once, so
				// that a chunk past the limit would run beside them.
				select {
				case <-full:
				case <-time.After(10 * time.Second): // a guard against a hang, not a measure
					return false, fmt.Errorf("chunk %d: never %d chunks at once", start/batch, MaxParallelChunks)
				}
				mu.Lock()
				seen[start] = append(seen[start], end)
				mu.Unlock()
				return false, tc.fail[start/batch]
			})
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, int32(MaxParallelChunks), peak.Load())
			require.Len(t, seen, (tc.n+batch-1)/batch)
			for start, ends := range seen {
				require.Equal(t, 0, start%batch)
				require.Equal(t, []int{min(start+batch, tc.n)}, ends, "chunk at %d", start)
			}
		})
	}
}

// raise sets max to v if v is larger.
func raise(max *atomic.Int32, v int32) {
	for {
		m := max.Load()
		if v <= m || max.CompareAndSwap(m, v) {
			return
		}
	}
}
