package cache

import (
	"strings"
	"testing"
	"time"
	"unsafe"
)

// A short string key's bytes are in its entry's own allocation, right
// after the entry, so that a hit that loads the entry finds them beside it
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
		if data != start+size {
			t.Errorf("a %d-byte key's bytes are at entry%+d, want right after the entry (%d)", n, int64(data)-int64(start), size)
		}
		want := int64(sizeClasses[class(size+uintptr(n))]) + indexEntryCost
		if got := int64(e.size); got != want {
			t.Errorf("an entry of a %d-byte key counts %d bytes, want its allocation and index share, %d", n, got, want)
		}
	}
}
