package cache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestStrHashSeesEveryByte changes each byte of strings of every length up
// to 200 (every branch of strHash) and requires the hash to change.
func TestStrHashSeesEveryByte(t *testing.T) {
	h := newHasher[string, string]()
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
	h := newHasher[string, string]()
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
	a, b := newHasher[string, string](), newHasher[string, string]()
	k := strings.Repeat("k", 20)
	if keyHash(&a, 0, k) == keyHash(&b, 0, k) || groupHash(&a, k) == groupHash(&b, k) {
		t.Fatal("two hashers agree on a key")
	}
}

type named string

// TestHashOfStringTypes requires keys whose type is a string type to hash
// as strings, and other keys by maphash.
func TestHashOfStringTypes(t *testing.T) {
	s := newHasher[string, named]()
	if !s.strings || keyHash(&s, 0, named("orders")) != strHash("orders", 0, &s.keys) {
		t.Error("a named string type does not hash as a string")
	}
	type pair struct{ a, b string }
	p := newHasher[string, pair]()
	xy, yx := pair{"x", "y"}, pair{"y", "x"}
	if p.strings || keyHash(&p, 0, xy) != keyHash(&p, 0, pair{"x", strings.ToLower("Y")}) || keyHash(&p, 0, xy) == keyHash(&p, 0, yx) {
		t.Error("a struct key does not hash by its value")
	}
}

// TestGroupSeedsKeyHash requires a key's hash to depend on its group's:
// the keys of two groups do not share their places in the cache's index.
func TestGroupSeedsKeyHash(t *testing.T) {
	for _, h := range []hasher{newHasher[string, string](), newHasher[string, int]()} {
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

// Group value types of the shapes groupHash hashes field by field: the
// client's (a scheme and a token), numbers before and after padding, an
// array, and two strings side by side.
type (
	schemeToken struct {
		scheme uint8
		token  string
	}
	padded struct {
		a uint8
		b uint64
		c bool
		d int16
		e string
		f int32
	}
	twoStrings struct{ a, b string }
	withFloat  struct {
		token string
		w     float64
	}
)

// checkGroupHash requires a and b, equal values in memory of their own, to
// hash alike, and each of the others to hash differently from a.
func checkGroupHash[G comparable](t *testing.T, a, b G, others ...G) {
	t.Helper()
	h := newHasher[G, string]()
	if a != b {
		t.Fatal("the test's two values are not equal")
	}
	if groupHash(&h, a) != groupHash(&h, b) {
		t.Errorf("%+v and an equal copy hash differently", a)
	}
	for _, o := range others {
		if groupHash(&h, o) == groupHash(&h, a) {
			t.Errorf("%+v and %+v hash alike", o, a)
		}
	}
}

// TestGroupHashFollowsEquality requires groupHash to hash equal group
// values alike (strings in memory of their own, padding whatever it
// holds) and to see every field: a value that differs in any one field,
// or whose strings split the same bytes differently, hashes differently.
func TestGroupHashFollowsEquality(t *testing.T) {
	tok := strings.Repeat("t", 43)
	t.Run("scheme and token", func(t *testing.T) {
		checkGroupHash(t, schemeToken{1, tok}, schemeToken{1, strings.Clone(tok)},
			schemeToken{2, tok}, schemeToken{1, tok[:42] + "u"}, schemeToken{1, tok[1:]}, schemeToken{})
	})
	t.Run("numbers around padding", func(t *testing.T) {
		p := padded{1, 2, true, -3, "x", 4}
		var q padded
		// Fill q's padding with ones, then set its fields: equal to p.
		b := unsafe.Slice((*byte)(unsafe.Pointer(&q)), unsafe.Sizeof(q))
		for i := range b {
			b[i] = 0xff
		}
		q.a, q.b, q.c, q.d, q.e, q.f = p.a, p.b, p.c, p.d, strings.Clone(p.e), p.f
		checkGroupHash(t, p, q,
			padded{9, 2, true, -3, "x", 4}, padded{1, 9, true, -3, "x", 4}, padded{1, 2, false, -3, "x", 4},
			padded{1, 2, true, 3, "x", 4}, padded{1, 2, true, -3, "y", 4}, padded{1, 2, true, -3, "x", -4})
	})
	t.Run("two strings", func(t *testing.T) {
		checkGroupHash(t, twoStrings{"ab", "c"}, twoStrings{strings.Clone("ab"), "c"},
			twoStrings{"a", "bc"}, twoStrings{"c", "ab"}, twoStrings{"abc", ""}, twoStrings{})
	})
	t.Run("array", func(t *testing.T) {
		checkGroupHash(t, [2]string{"a", "b"}, [2]string{"a", strings.Clone("b")}, [2]string{"b", "a"})
	})
	t.Run("string", func(t *testing.T) {
		checkGroupHash(t, tok, strings.Clone(tok), tok[1:], "")
	})
	t.Run("integer", func(t *testing.T) {
		checkGroupHash(t, 7, 7, 8, -7, 0)
	})
}

// TestGroupHashFieldByField requires the group types of strings and
// numbers to hash field by field, the client's (a scheme and a token)
// among them, and the others (a float, which can equal a value of other
// bits) whole, by maphash: both ways hash equal values alike.
func TestGroupHashFieldByField(t *testing.T) {
	for name, fields := range map[string][]plainField{
		"scheme and token": newHasher[schemeToken, string]().fields,
		"padded":           newHasher[padded, string]().fields,
		"string":           newHasher[string, string]().fields,
	} {
		if len(fields) == 0 {
			t.Errorf("%s: hashed whole, want field by field", name)
		}
	}
	if fs := newHasher[withFloat, string]().fields; fs != nil {
		t.Errorf("a group with a float hashes field by field (%v), want whole", fs)
	}
	checkGroupHash(t, withFloat{"a", 0}, withFloat{"a", math.Copysign(0, -1)}, withFloat{"a", 1})
	if fs := newHasher[*int, string]().fields; fs != nil {
		t.Errorf("a pointer hashes field by field (%v), want whole", fs)
	}
}
