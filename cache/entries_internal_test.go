package cache

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// A short string key's bytes are in its entry's own allocation, right
// before the entry, so that a hit that loads the entry finds them beside it
// (one dependent cache miss fewer than following the caller's pointer);
// what the entry counts against the byte bound is that allocation and its
// share of the index.
func TestShortKeyLivesInItsEntry(t *testing.T) {
	c, err := New[string, string, bool](8)
	if err != nil {
		t.Fatal(err)
	}
	size := entrySize[string, string, bool]()
	for _, n := range []int{1, 20, 64, 1024 - int(size)} {
		key := strings.Repeat("k", n)
		c.Add("g", key, true, time.Hour, 0)
		grp := c.Lookup("g")
		e := c.idx.get(keyHash(&c.keys, grp.seed, key), grp, key)
		if e == nil {
			t.Fatalf("no entry under a %d-byte key", n)
		}
		start, data := uintptr(unsafe.Pointer(e)), uintptr(unsafe.Pointer(unsafe.StringData(e.key)))
		if data+uintptr(n) != start {
			t.Errorf("a %d-byte key's bytes are at entry%+d, want right before the entry (%d)", n, int64(data)-int64(start), -n)
		}
		want := int64(sizeClasses[class(size+uintptr(n))]) + indexEntryCost
		if got := int64(e.size); got != want {
			t.Errorf("an entry of a %d-byte key counts %d bytes, want its allocation and index share, %d", n, got, want)
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
	c, err := New[ident, string, bool](8)
	if err != nil {
		t.Fatal(err)
	}
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
