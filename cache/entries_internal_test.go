package cache

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// A short string key's bytes are in its entry's own allocation, right
// before the entry, so that a hit that loads the entry finds them beside it
// (one dependent cache miss fewer than following the caller's pointer);
// what the entry counts against the byte bound is that allocation and its
// share of the cache's structures.
func TestShortKeyLivesInItsEntry(t *testing.T) {
	c := testkit.Must(New[string, string, bool](8))(t)
	size := entrySize[string, string, bool]()
	// The largest key that shares a 1 KiB allocation: an object of more
	// than 512 bytes that holds pointers carries an 8-byte malloc header.
	for _, n := range []int{1, 20, 64, 512 - int(size), 1024 - 8 - int(size)} {
		key := strings.Repeat("k", n)
		c.Add("g", key, true, time.Hour, 0)
		grp := c.Lookup("g")
		e := c.find(grp, key)
		if e == nil {
			t.Fatalf("no entry under a %d-byte key", n)
		}
		start, data := uintptr(unsafe.Pointer(e)), uintptr(unsafe.Pointer(unsafe.StringData(e.key)))
		if data+uintptr(n) != start {
			t.Errorf("a %d-byte key's bytes are at entry%+d, want right before the entry (%d)", n, int64(data)-int64(start), -n)
		}
		want := allocSize(size+uintptr(n), true) + entryShare
		if got := int64(e.size); got != want {
			t.Errorf("an entry of a %d-byte key counts %d bytes, want its allocation and its share of the cache's structures, %d", n, got, want)
		}
	}
}

// A group value's strings (a token) are the cache's own copies, in the
// group's allocation right before the group, so that a lookup by value
// compares the token's bytes beside the group it has just loaded; a group
// value that holds other pointers is kept as given.
func TestGroupValueStringsLiveInTheGroup(t *testing.T) {
	type ident struct {
		scheme uint8
		token  string
	}
	c := testkit.Must(New[ident, string, bool](8))(t)
	tok := []byte(strings.Repeat("t", 43))
	c.Add(ident{1, unsafe.String(&tok[0], len(tok))}, "k", true, time.Hour, 0)
	copy(tok, strings.Repeat("x", 43)) // the caller's bytes change; the cache's do not
	grp := c.Lookup(ident{1, strings.Repeat("t", 43)})
	if grp == c.none {
		t.Fatal("the group is not found by its value")
	}
	if _, ok := c.Get(ident{1, strings.Repeat("t", 43)}, "k"); !ok {
		t.Error("the entry is not found by its group's value")
	}
	start, data := uintptr(unsafe.Pointer(grp)), uintptr(unsafe.Pointer(unsafe.StringData(grp.id.token)))
	if data+43 != start {
		t.Errorf("the token's bytes are at group%+d, want right before the group (-43)", int64(data)-int64(start))
	}

	if _, copies := stringsOf(reflect.TypeFor[struct{ P *int }]()); copies {
		t.Error("a group value with a pointer is copied")
	}
}

// TestEntryAndKeyTakeTheClassTheyCount: an entry that shares its
// allocation with its key's bytes takes no more than the size class cost
// counts, also past 512 bytes, where an object that holds pointers carries
// the runtime's 8-byte malloc header (the struct leaves room for it, so it
// does not spill into the next class).
func TestEntryAndKeyTakeTheClassTheyCount(t *testing.T) {
	size := entrySize[string, string, bool]()
	for _, n := range []int{64, 400, 512 - int(size), 513 - int(size), 1024 - 8 - int(size), 1024 - int(size)} {
		c := testkit.Must(New[string, string, bool](1 << 20))(t)
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

// The size classes are the runtime's: increasing, ending at the largest
// small object, with the first inlineClasses of them those up to 1 KiB.
func TestSizeClassTable(t *testing.T) {
	for i := 1; i < len(sizeClasses); i++ {
		if sizeClasses[i] <= sizeClasses[i-1] {
			t.Fatalf("size class %d (%d) is not above the one before (%d)", i, sizeClasses[i], sizeClasses[i-1])
		}
	}
	if last := sizeClasses[len(sizeClasses)-1]; last != maxSmallSize {
		t.Errorf("the last size class is %d, want %d", last, maxSmallSize)
	}
	if c := sizeClasses[inlineClasses-1]; c != 1024 {
		t.Errorf("the last inline class is %d, want 1024", c)
	}
}
