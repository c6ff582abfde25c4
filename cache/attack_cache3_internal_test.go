package cache

import (
	"runtime"
	"strings"
	"testing"
)

// keyStore.make's struct "fills its size class" and cost counts that class,
// but an object of more than 512 bytes (64-bit) that holds pointers carries
// the runtime's 8-byte malloc header (runtime heapBitsInSpan,
// gc.MinSizeForMallocHeader): a struct of 576..1024 bytes takes the next
// class (1024 -> 1152), so every entry whose key and entry pass 512 bytes
// holds a class more than it counts. groupStore.make's groups likewise.
func TestAttackFilledSizeClassTakesTheNext(t *testing.T) {
	size := entrySize[string, string, bool]()
	for _, n := range []int{64, 400, 1024 - int(size)} {
		c, err := New[string, string, bool](1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.Repeat("k", n)
		const count = 2000
		keep := make([]*entry[string, string, bool], count)
		c.mu.Lock()
		c.store.make(key) // the struct type, made once
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = c.store.make(key)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		c.mu.Unlock()
		per := float64(after.HeapAlloc-before.HeapAlloc) / count
		counted := c.store.cost(&key) - indexEntryCost
		t.Logf("key %d bytes: entry and key take %.0f bytes, cost counts %d", n, per, counted)
		if per > float64(counted)+8 {
			t.Errorf("an entry with a %d-byte key takes %.0f bytes, cost counts %d", n, per, counted)
		}
		runtime.KeepAlive(keep)
	}
}
