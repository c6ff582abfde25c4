package cache

import (
	"reflect"
	"strings"
	"unsafe"
)

// keyStore makes a cache's entries and says what each one costs.
//
// A cache keeps its own copy of a string key (K of kind string), and keeps
// it in the entry's own allocation when the two fit in one of the
// runtime's small size classes: the entry is the first field of a struct
// whose second is an array of bytes that fills the size class, and the
// entry's key points at that array. A hit then compares the key's bytes
// in the memory it has just loaded the entry from, instead of following a
// pointer into memory of the caller's: at 100,000 entries and more, where
// most lookups miss the CPU's caches, that is one dependent cache miss
// fewer a hit. The key's bytes are never written again once the entry is
// made, as a string's must not be. A longer key is copied into an
// allocation of its own; a key of another kind is stored as given.
//
// What an entry costs, counted against the byte bound, is therefore the
// memory of the entry and its key's bytes together, plus its share of the
// index (indexEntryCost): cost returns it before anything is allocated.
type keyStore[G, K comparable, V any] struct {
	strings bool
	// withKey[i] is the struct of an entry and the bytes that fill
	// sizeClasses[i], made when first needed, under the cache's mu; nil
	// for the classes too small for an entry.
	withKey [len(sizeClasses)]reflect.Type
}

// entrySize is what an entry takes without its key's bytes.
func entrySize[G, K comparable, V any]() uintptr {
	var e entry[G, K, V]
	return unsafe.Sizeof(e)
}

// keyBytes returns k's bytes when K is a string type, and 0 otherwise.
func (s *keyStore[G, K, V]) keyBytes(k *K) string {
	if !s.strings {
		return ""
	}
	return *(*string)(unsafe.Pointer(k)) // K is a string type: its value is a string
}

// class returns the index in sizeClasses of the allocation that holds an
// entry and n bytes of key, or -1 when none of the small classes does.
func class(size uintptr) int {
	for i, c := range sizeClasses {
		if size <= c {
			return i
		}
	}
	return -1
}

// cost returns what an entry under key k costs the byte bound, without the
// caller's size: its allocation (with its key's bytes, for a string key)
// and its share of the index.
func (s *keyStore[G, K, V]) cost(k *K) int64 {
	n := uintptr(len(s.keyBytes(k)))
	size := entrySize[G, K, V]()
	if n == 0 {
		return allocSize(size) + indexEntryCost
	}
	if i := class(size + n); i >= 0 {
		return int64(sizeClasses[i]) + indexEntryCost
	}
	return allocSize(size) + allocSize(n) + indexEntryCost
}

// make returns a new entry under key k, its own copy for a string key.
// c.mu must be held (it may make the struct of a size class).
func (s *keyStore[G, K, V]) make(k K) *entry[G, K, V] {
	key := s.keyBytes(&k)
	if len(key) == 0 {
		return &entry[G, K, V]{key: k}
	}
	size := entrySize[G, K, V]()
	i := class(size + uintptr(len(key)))
	if i < 0 {
		e := &entry[G, K, V]{}
		*(*string)(unsafe.Pointer(&e.key)) = strings.Clone(key)
		return e
	}
	t := s.withKey[i]
	if t == nil {
		t = reflect.StructOf([]reflect.StructField{
			{Name: "E", Type: reflect.TypeFor[entry[G, K, V]]()},
			{Name: "B", Type: reflect.ArrayOf(int(sizeClasses[i]-size), reflect.TypeFor[byte]())},
		})
		s.withKey[i] = t
	}
	p := reflect.New(t).UnsafePointer()
	// The entry is the struct's first field, the bytes its second: both
	// are inside the one allocation p points at.
	buf := unsafe.Slice((*byte)(unsafe.Add(p, t.Field(1).Offset)), len(key))
	copy(buf, key)
	e := (*entry[G, K, V])(p)
	*(*string)(unsafe.Pointer(&e.key)) = unsafe.String(&buf[0], len(buf))
	return e
}
