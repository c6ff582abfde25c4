package cache_test

import (
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/orgauthz/orgauthz/cache"
)

// What Bytes counts for entries and groups whose copies the cache makes,
// against what the heap grows by, at key and token lengths around the
// size-class edges: an allocation of more than 512 bytes that holds
// pointers carries an 8-byte malloc header (runtime heapBitsInSpan), so a
// struct that "fills its size class" of 576..1024 bytes takes the next
// class; a copy over 1 KiB takes the runtime's next class (1025 -> 1152,
// 4097 -> 4864, 6913 -> 8192) or whole pages, not its length.
func TestAttackBytesAtSizeClassEdges(t *testing.T) {
	for _, tt := range []struct {
		name           string
		keyLen, tokLen int
	}{
		{"key 400", 400, 1},
		{"key 900", 900, 1},
		{"key 1025", 1025, 1},
		{"key 4097", 4097, 1},
		{"key 6913", 6913, 1},
		{"key 32769", 32769, 1},
		{"token 900", 1, 900},
		{"token 4097", 1, 4097},
		{"token 6913", 1, 6913},
		{"token 32769", 1, 32769},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 4000
			if tt.keyLen+tt.tokLen > 5000 {
				n = 800
			}
			keyBuf := []byte(strings.Repeat("k", tt.keyLen))
			tokBuf := []byte(strings.Repeat("t", tt.tokLen))
			c, err := cache.New[token, string, bool](n + 1)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range n {
				// A distinct key and token each time, from reused buffers:
				// every byte the heap grows by is the cache's.
				if len(keyBuf) >= 4 {
					binary.LittleEndian.PutUint32(keyBuf, uint32(i))
				}
				tokBuf[0] = byte(i)
				if len(tokBuf) > 1 {
					tokBuf[1] = byte(i >> 8)
				}
				g := token{"", unsafe.String(&tokBuf[0], len(tokBuf))}
				if !c.Add(g, unsafe.String(&keyBuf[0], len(keyBuf)), true, time.Hour, 0) {
					t.Fatal("not stored")
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			grown := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			counted := float64(c.Bytes())
			t.Logf("%d entries: heap grew %.0f, Bytes %.0f: %.3f", c.Len(), grown, counted, grown/counted)
			if grown > 1.05*counted {
				t.Errorf("the cache holds %.1f%% more than it counts", 100*(grown/counted-1))
			}
			runtime.KeepAlive(c)
		})
	}
}

