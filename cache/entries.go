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
// index (indexEntryCost): cost returns it before anything is allocated.
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
// and its share of the index.
func (s *keyStore[G, K, V]) cost(k *K) int64 {
	n := uintptr(len(s.keyBytes(k)))
	size := entrySize[G, K, V]()
	if n == 0 {
		return allocSize(size, true) + indexEntryCost
	}
	if i := class(size + n); i >= 0 {
		return allocSize(roomIn(sizeClasses[i]), true) + indexEntryCost
	}
	return allocSize(size, true) + allocSize(n, false) + indexEntryCost
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
