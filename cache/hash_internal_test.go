package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestStrHashSeesEveryByte changes each byte of strings of every length up
// to 200 (every branch of strHash) and requires the hash to change.
func TestStrHashSeesEveryByte(t *testing.T) {
	h := newHasher[string]()
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 201 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := strHash(string(b), 0, &h.keys)
		if again := strHash(string(b), 0, &h.keys); again != want {
			t.Fatalf("length %d: the same string hashes to %x and %x", n, want, again)
		}
		for i := range b {
			b[i] ^= 1 << (i % 8)
			if strHash(string(b), 0, &h.keys) == want {
				t.Fatalf("length %d: changing byte %d leaves the hash as it was", n, i)
			}
			b[i] ^= 1 << (i % 8)
		}
	}
}

// TestStrHashSpreadsKeys hashes keys that differ little, as cache keys of
// one token do, and requires both ends of the hash to spread them evenly:
// a table indexes by the low bits.
func TestStrHashSpreadsKeys(t *testing.T) {
	const keys, buckets = 1 << 16, 1 << 10
	h := newHasher[string]()
	var low, high [buckets]int
	for i := range keys {
		v := strHash(fmt.Sprintf("\x00\x06\x00\x04orders-%d/read", i), 0, &h.keys)
		low[v%buckets]++
		high[v>>54]++
	}
	// 64 keys a bucket on average; with a uniform hash the fullest of
	// 1,024 buckets holds about 90 (a 6-sigma bound is 112).
	for name, counts := range map[string]*[buckets]int{"low": &low, "high": &high} {
		if m := slices.Max(counts[:]); m > 112 {
			t.Errorf("the %s bits put %d keys in one bucket, want at most 112 of %d a bucket", name, m, keys/buckets)
		}
	}
}

// TestHashIsSeededPerCache requires two caches to hash the same key
// differently, so that keys chosen to collide in one collide nowhere else.
func TestHashIsSeededPerCache(t *testing.T) {
	a, b := newHasher[string](), newHasher[string]()
	k := strings.Repeat("k", 20)
	if keyHash(&a, 0, k) == keyHash(&b, 0, k) || groupHash(&a, k) == groupHash(&b, k) {
		t.Fatal("two hashers agree on a key")
	}
}

type named string

// TestHashOfStringTypes requires keys whose type is a string type to hash
// as strings, and other keys by maphash.
func TestHashOfStringTypes(t *testing.T) {
	s := newHasher[named]()
	if !s.strings || keyHash(&s, 0, named("orders")) != strHash("orders", 0, &s.keys) {
		t.Error("a named string type does not hash as a string")
	}
	type pair struct{ a, b string }
	p := newHasher[pair]()
	xy, yx := pair{"x", "y"}, pair{"y", "x"}
	if p.strings || keyHash(&p, 0, xy) != keyHash(&p, 0, pair{"x", strings.ToLower("Y")}) || keyHash(&p, 0, xy) == keyHash(&p, 0, yx) {
		t.Error("a struct key does not hash by its value")
	}
}

// TestGroupSeedsKeyHash requires a key's hash to depend on its group's:
// the keys of two groups do not share their places in the cache's index.
func TestGroupSeedsKeyHash(t *testing.T) {
	for _, h := range []hasher{newHasher[string](), newHasher[int]()} {
		a, b := groupHash(&h, "alice"), groupHash(&h, "bob")
		if a == b {
			t.Fatal("two groups hash alike")
		}
		if h.strings {
			if keyHash(&h, a, "orders/read") == keyHash(&h, b, "orders/read") {
				t.Error("a string key hashes alike in two groups")
			}
		} else if keyHash(&h, a, 7) == keyHash(&h, b, 7) {
			t.Error("an int key hashes alike in two groups")
		}
	}
}
