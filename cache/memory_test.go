package cache_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// A cache of many callers holds one or two decisions per token: such a
// token must cost little beyond its strings. With 43-character tokens (an
// opaque OAuth access token) of one entry each, the heap grows by at most
// 140 bytes an entry beyond the tokens' and keys' own bytes, which the
// caller made and lets go once they are added (the cache keeps its own
// copies, in the entry's and the group's allocations): the entry, its
// group, its place in the recency ring and the group's place in the table
// of groups; a group of one entry keeps it in the group, not in the index.
// (A Go map of the same pairs takes about 75; the cache took 185 when an
// entry carried four list links and was in the index too.)
func TestOneEntryGroupsCostLittle(t *testing.T) {
	const n = 24_000 // the table of groups about three quarters full
	tokens := make([]token, n)
	keys := make([]string, n)
	for i := range tokens {
		tokens[i] = token{"Bearer", fmt.Sprintf("%s%08d", strings.Repeat("t", 35), i)}
		keys[i] = fmt.Sprintf("\x00\x08\x00\x04orders/%dread", i%1000)
	}
	c := testkit.Must(cache.New[token, string, bool](n))(t)
	perEntry := float64(testkit.HeapGrowth(func() {
		for i := range tokens {
			c.Add(tokens[i], keys[i], true, time.Hour, 0)
		}
	})) / n
	t.Logf("%.1f bytes an entry", perEntry)
	if perEntry > 140 {
		t.Errorf("a token of one entry costs %.1f bytes of bookkeeping, want at most 140", perEntry)
	}
	runtime.KeepAlive(c)
}

// TestEmptyStringsHoldNothingOfTheCaller: every string the cache stores is
// its own copy or the empty constant "", so an empty key or an empty
// string in a group value cut from a caller's larger string (big[:0],
// strings.TrimPrefix("Bearer ", "Bearer ")) keeps none of the caller's
// memory alive: what the cache holds stays what Bytes counts.
func TestEmptyStringsHoldNothingOfTheCaller(t *testing.T) {
	for _, tt := range []struct {
		name string
		add  func(c *cache.Cache[token, string, bool], i int, big string)
	}{
		{"empty key", func(c *cache.Cache[token, string, bool], i int, big string) {
			c.Add(token{"Bearer", strconv.Itoa(i)}, big[:0], true, time.Hour, 0)
		}},
		{"empty scheme in a group value", func(c *cache.Cache[token, string, bool], i int, big string) {
			c.Add(token{big[:0], strconv.Itoa(i)}, "k", true, time.Hour, 0)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const n, size = 64, 1 << 20
			c := testkit.Must(cache.New[token, string, bool](1000, cache.WithMaxBytes(1<<20)))(t)
			grown := testkit.HeapGrowth(func() {
				for i := range n {
					big := strings.Repeat(string(rune('a'+i%26)), size) // a request's bytes, say
					tt.add(c, i, big)
				}
			})
			t.Logf("heap grew %d bytes; Bytes %d (bound %d)", grown, c.Bytes(), 1<<20)
			if grown > 4<<20 {
				t.Errorf("the cache keeps %d MiB of its callers' memory alive, Bytes counts %d bytes (bound 1 MiB)", grown>>20, c.Bytes())
			}
			runtime.KeepAlive(c)
		})
	}
}

// TestBytesCountTheRuntimesRounding: what Bytes counts for entries and
// groups whose strings the cache copies is what the heap grows by (within
// 5%), at key and token lengths around the runtime's size-class edges: an
// allocation of more than 512 bytes that holds pointers carries an 8-byte
// malloc header, a copy over 1 KiB takes the runtime's next size class
// (1025 -> 1152, 4097 -> 4864, 6913 -> 8192), and one over 32 KiB whole
// pages, not its length.
func TestBytesCountTheRuntimesRounding(t *testing.T) {
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
			n := 2000
			if tt.keyLen+tt.tokLen > 5000 {
				n = 400
			}
			keyBuf := []byte(strings.Repeat("k", tt.keyLen))
			tokBuf := []byte(strings.Repeat("t", tt.tokLen))
			c := testkit.Must(cache.New[token, string, bool](n + 1))(t)
			grown := float64(testkit.HeapGrowth(func() {
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
			}))
			counted := float64(c.Bytes())
			t.Logf("%d entries: heap grew %.0f, Bytes %.0f: %.3f", c.Len(), grown, counted, grown/counted)
			if grown > 1.05*counted {
				t.Errorf("the cache holds %.1f%% more than it counts", 100*(grown/counted-1))
			}
			runtime.KeepAlive(c)
		})
	}
}

// TestFootprintIsTheLeastBoundThatKeepsTheEntry: Footprint is what one
// entry alone in its group adds to Bytes, and a byte bound of Footprint
// keeps it while one byte less keeps nothing, for keys and group values
// from empty to longer than the runtime's small size classes: a caller can
// refuse a bound that could never keep an entry (pep's WithCacheMaxBytes).
func TestFootprintIsTheLeastBoundThatKeepsTheEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		grp  token
		key  string
		size int64
	}{
		{"empty key and token", token{"Bearer", ""}, "", 0},
		{"short key and token", token{"Bearer", "alice"}, "orders/read", 0},
		{"caller's size", token{"DPoP", "alice"}, "orders/read", 100},
		{"token past the small size classes", token{"Bearer", strings.Repeat("t", 40<<10)}, strings.Repeat("k", 1028), 0},
		{"8 KiB token and 1 KiB key", token{"Bearer", strings.Repeat("t", 8<<10)}, strings.Repeat("k", 1028), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			need := cache.Footprint[token, string, bool](tt.grp, tt.key, tt.size)
			unbounded := testkit.Must(cache.New[token, string, bool](10))(t)
			unbounded.Add(tt.grp, tt.key, true, time.Hour, tt.size)
			if got := unbounded.Bytes(); got != need {
				t.Errorf("one entry counts %d bytes, Footprint says %d", got, need)
			}
			for _, bound := range []int64{need, need - 1} {
				c := testkit.Must(cache.New[token, string, bool](10, cache.WithMaxBytes(bound)))(t)
				c.Add(tt.grp, tt.key, true, time.Hour, tt.size)
				if want := map[bool]int{true: 1, false: 0}[bound == need]; c.Len() != want {
					t.Errorf("a bound of %d bytes (Footprint %d) keeps %d entries, want %d", bound, need, c.Len(), want)
				}
			}
		})
	}
}
