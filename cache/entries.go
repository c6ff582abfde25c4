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
// runtime's small size classes: the entry is the last field of a struct
// whose first is an array of bytes that fills the size class, the key's
// bytes end where the entry starts, and the entry's key points at them. A
// hit then reads the key's bytes and the entry's first fields (its key,
// state, expiry, group and value) as one run of memory, instead of
// following a pointer into memory of the caller's: at 100,000 entries and
// more, where most lookups miss the CPU's caches, that is a dependent
// cache miss fewer a hit, and often a cache line fewer. The key's bytes are never written again once the entry is
// made, as a string's must not be. A longer key is copied into an
// allocation of its own, and an empty one is the constant "" (no pointer):
// every string key the cache stores is its own, and none keeps memory of
// the caller's alive. A key of another kind is stored as given.
//
// What an entry costs, counted against the byte bound, is therefore the
// memory of the entry and its key's bytes together, plus its share of the
// cache's other structures (entryShare): cost returns it before anything
// is allocated.
type keyStore[G, K comparable, V any] struct {
	strings bool
	// withKey[i] is the struct of bytes and then an entry that fills
	// sizeClasses[i] (with the malloc header, see roomIn), made when
	// first needed, under the cache's mu; nil for the classes too small
	// for an entry.
	withKey [inlineClasses]reflect.Type
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

// cost returns what an entry under key k costs the byte bound, without the
// caller's size: its allocation (with its key's bytes, for a string key)
// and its share of the ring, the index and its group's members
// (entryShare).
func (s *keyStore[G, K, V]) cost(k *K) int64 {
	n := uintptr(len(s.keyBytes(k)))
	size := entrySize[G, K, V]()
	if n == 0 {
		return allocSize(size, true) + entryShare
	}
	if i := class(size + n); i >= 0 {
		return allocSize(roomIn(sizeClasses[i]), true) + entryShare
	}
	return allocSize(size, true) + allocSize(n, false) + entryShare
}

// make returns a new entry under key k, its own copy for a string key.
// c.mu must be held (it may make the struct of a size class).
func (s *keyStore[G, K, V]) make(k K) *entry[G, K, V] {
	key := s.keyBytes(&k)
	if s.strings && len(key) == 0 {
		// The zero K, "": an empty key cut from the caller's bytes
		// (big[:0]) would keep them all alive.
		return &entry[G, K, V]{}
	}
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
		t = withBytes[entry[G, K, V]](roomIn(sizeClasses[i]))
		s.withKey[i] = t
	}
	p, buf := newWithBytes(t, len(key))
	copy(buf, key)
	e := (*entry[G, K, V])(p)
	*(*string)(unsafe.Pointer(&e.key)) = unsafe.String(&buf[0], len(buf))
	return e
}

// withBytes returns the struct of an array of bytes and then a T (field
// names B and T) of size bytes: roomIn of a size class, so that it takes
// the whole class and no more, malloc header included.
func withBytes[T any](size uintptr) reflect.Type {
	var x T
	return reflect.StructOf([]reflect.StructField{
		{Name: "B", Type: reflect.ArrayOf(int(size-unsafe.Sizeof(x)), reflect.TypeFor[byte]())},
		{Name: "T", Type: reflect.TypeFor[T]()},
	})
}

// newWithBytes allocates a t of withBytes and returns its T and the last n
// bytes of its array, which end where the T starts: both are inside the
// one allocation.
func newWithBytes(t reflect.Type, n int) (unsafe.Pointer, []byte) {
	p := reflect.New(t).UnsafePointer()
	off := t.Field(1).Offset
	return unsafe.Add(p, off), unsafe.Slice((*byte)(unsafe.Add(p, off-uintptr(n))), n)
}

// groupStore makes a cache's groups and says what each one costs, as
// keyStore does for entries: the cache keeps its own copy of the strings
// of a group value (a string, or a struct of strings and plain numbers
// such as a scheme and a token), in the group's own allocation, right
// before the group, when they fit in one of the small size classes, so
// that a lookup by group value compares the token's bytes in the run of
// memory it loads the group's value, hash and generation from; an empty
// string is the constant "", never a pointer into the caller's bytes. A
// group value of any other type (one that holds pointers other
// than strings) is kept as given.
type groupStore[G, K comparable, V any] struct {
	// strs are the offsets of the strings in a G; copies is false for a G
	// whose value is kept as given.
	strs   []uintptr
	copies bool
	// withBytes[i] is the struct of bytes and then a Group that fills
	// sizeClasses[i] (with the malloc header, see roomIn), made when
	// first needed, under the cache's mu.
	withBytes [inlineClasses]reflect.Type
}

// init learns where G's strings are.
func (s *groupStore[G, K, V]) init() {
	s.strs, s.copies = stringsOf(reflect.TypeFor[G]())
}

// stringsOf returns the offsets of the strings in a value of type t, and
// whether a copy of t's strings makes a value that holds nothing of the
// original: t is a string, a plain number or boolean, or a struct or
// array of such.
func stringsOf(t reflect.Type) ([]uintptr, bool) {
	switch t.Kind() {
	case reflect.String:
		return []uintptr{0}, true
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil, true
	case reflect.Struct:
		var offs []uintptr
		for i := range t.NumField() {
			f := t.Field(i)
			in, ok := stringsOf(f.Type)
			if !ok {
				return nil, false
			}
			for _, o := range in {
				offs = append(offs, f.Offset+o)
			}
		}
		return offs, true
	case reflect.Array:
		in, ok := stringsOf(t.Elem())
		if !ok {
			return nil, false
		}
		var offs []uintptr
		for i := range t.Len() {
			for _, o := range in {
				offs = append(offs, uintptr(i)*t.Elem().Size()+o)
			}
		}
		return offs, true
	}
	return nil, false
}

// stringBytes returns the number of bytes of g's strings, 0 for a group
// value kept as given.
func (s *groupStore[G, K, V]) stringBytes(g *G) uintptr {
	if !s.copies {
		return 0
	}
	var n uintptr
	for _, o := range s.strs {
		n += uintptr(len(*(*string)(unsafe.Add(unsafe.Pointer(g), o))))
	}
	return n
}

// emptyStrings makes g's strings, all empty, the constant "": an empty
// string cut from the caller's bytes (big[:0]) would keep them all alive.
func (s *groupStore[G, K, V]) emptyStrings(g *G) {
	for _, o := range s.strs {
		*(*string)(unsafe.Add(unsafe.Pointer(g), o)) = ""
	}
}

// cost returns what a group of value g costs the byte bound: its
// allocation (with its strings' bytes, which it copies) and its share of
// the cache's table of groups.
func (s *groupStore[G, K, V]) cost(g *G) int64 {
	var grp Group[G, K, V]
	size, n := unsafe.Sizeof(grp), s.stringBytes(g)
	if n == 0 {
		return allocSize(size, true) + groupIndexCost
	}
	if i := class(size + n); i >= 0 {
		return allocSize(roomIn(sizeClasses[i]), true) + groupIndexCost
	}
	return allocSize(size, true) + allocSize(n, false) + groupIndexCost
}

// make returns a new group of value g, whose strings it copies, with hash
// h. c.mu must be held (it may make the struct of a size class).
func (s *groupStore[G, K, V]) make(c *Cache[G, K, V], g G, h uint64) *Group[G, K, V] {
	n := s.stringBytes(&g)
	if n == 0 {
		grp := &Group[G, K, V]{c: c, id: g, seed: h}
		s.emptyStrings(&grp.id)
		return grp
	}
	var grp *Group[G, K, V]
	var buf []byte
	size := unsafe.Sizeof(*grp)
	if i := class(size + n); i >= 0 {
		t := s.withBytes[i]
		if t == nil {
			t = withBytes[Group[G, K, V]](roomIn(sizeClasses[i]))
			s.withBytes[i] = t
		}
		var p unsafe.Pointer
		p, buf = newWithBytes(t, int(n))
		grp = (*Group[G, K, V])(p)
	} else {
		grp = new(Group[G, K, V])
		buf = make([]byte, n)
	}
	grp.c, grp.id, grp.seed = c, g, h
	for _, o := range s.strs {
		str := (*string)(unsafe.Add(unsafe.Pointer(&grp.id), o))
		if len(*str) == 0 {
			*str = "" // no pointer into the caller's bytes
			continue
		}
		copy(buf, *str)
		*str = unsafe.String(&buf[0], len(*str))
		buf = buf[len(*str):]
	}
	return grp
}

// What an object takes on the heap, by the Go runtime's rules (Go 1.26,
// 64-bit; internal/runtime/gc and runtime/malloc.go), so that what the
// cache counts against the byte bound is what it holds:
//
//   - a small object (up to maxSmallSize less the malloc header) takes the
//     first of sizeClasses that holds it;
//   - one that holds pointers and is larger than minSizeForMallocHeader
//     carries a malloc header of mallocHeaderSize bytes in its allocation,
//     so it takes the first class that holds it and the header;
//   - a larger object takes whole pages.

// sizeClasses are the runtime's allocation sizes of small objects
// (SizeClassToSize of internal/runtime/gc/sizeclasses.go, without class
// 0).
var sizeClasses = [...]uintptr{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024,
	1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912,
	8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const (
	ptrSize = unsafe.Sizeof(uintptr(0))
	// minSizeForMallocHeader is the largest object that holds pointers
	// without a malloc header (gc.MinSizeForMallocHeader).
	minSizeForMallocHeader = ptrSize * 8 * ptrSize
	// mallocHeaderSize is the header's size (gc.MallocHeaderSize).
	mallocHeaderSize = ptrSize
	// maxSmallSize is the largest small size class (gc.MaxSmallSize).
	maxSmallSize = 32768
	// pageSize is the runtime's page (gc.PageSize).
	pageSize = 8192
	// inlineClasses counts the size classes, up to 1 KiB, in which an
	// entry shares its allocation with its key's bytes, and a group with
	// its strings' (see keyStore and groupStore).
	inlineClasses = 32
)

// allocSize returns the memory an object of n bytes takes on the heap;
// pointers says whether it holds pointers. 0 takes nothing.
func allocSize(n uintptr, pointers bool) int64 {
	switch {
	case n == 0:
		return 0
	case n > maxSmallSize-mallocHeaderSize:
		return int64((n + pageSize - 1) &^ (pageSize - 1))
	case pointers && n > minSizeForMallocHeader:
		n += mallocHeaderSize
	}
	for _, c := range sizeClasses {
		if n <= c {
			return int64(c)
		}
	}
	panic("cache: no size class holds a small object") // n <= maxSmallSize here
}

// roomIn returns the largest object that holds pointers and takes no more
// than size class c: c less the malloc header such an object carries
// when it is larger than minSizeForMallocHeader.
func roomIn(c uintptr) uintptr {
	if c > minSizeForMallocHeader {
		return c - mallocHeaderSize
	}
	return c
}

// class returns the index in sizeClasses of the smallest of the first
// inlineClasses classes whose room (roomIn) holds an object of size bytes
// that holds pointers (an entry or a group and the bytes of its strings),
// or -1 when none does.
func class(size uintptr) int {
	for i, c := range sizeClasses[:inlineClasses] {
		if size <= roomIn(c) {
			return i
		}
	}
	return -1
}
