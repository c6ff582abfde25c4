package cache

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"unsafe"
)

// hasher hashes the (group, key) pairs of a cache's index, seeded once per
// cache so that nobody can choose pairs that collide.
//
// A pair's hash is its key's hash seeded with its group's hash (groupHash):
// a [Group] handle keeps its group's hash, so that a hit through it hashes
// the key alone, and a lookup by group value hashes the group once and
// then the key.
//
// A group value that is a string, an integer or a boolean, or a struct or
// array of such (a scheme and a token), hashes field by field (fields):
// each string by the runtime's string hash (maphash.Comparable of the
// string, AES-based), each number by its bits, each mixed into the hash of
// the fields before it. maphash.Comparable of the whole value hashes the
// same fields, but through the type's generic hash function, which hashes
// a one-byte scheme with a call of its own before the token's: on a lookup
// by value that took 22 ns where this takes 10. Any other group type (one
// with a float, which can equal a value of other bits, or a pointer) hashes
// with maphash.Comparable.
//
// Keys whose type is a string hash with strHash, the Go runtime's own
// string hash for machines without AES instructions (memhashFallback in
// runtime/hash64.go, a wyhash), which on short keys costs about a third of
// hash/maphash's AES-based one: a hit hashes its key on its critical path.
// Other keys hash with maphash.Comparable, mixed with the group's hash.
type hasher struct {
	strings bool
	keys    [4]uint64
	seed    maphash.Seed
	// fields are the parts of a group value that groupHash hashes one by
	// one, in order; nil for a group type that maphash.Comparable hashes
	// whole.
	fields []plainField
}

// plainField is a part of a group value that groupHash hashes by itself: a
// string, by its bytes, or an integer or a boolean, by its bits.
type plainField struct {
	off uintptr
	// size is the integer's size in bytes (1, 2, 4 or 8), 0 for a string.
	size uintptr
}

// newHasher returns a hasher of groups of type G and keys of type K, with
// seeds of its own.
func newHasher[G, K comparable]() hasher {
	h := hasher{strings: reflect.TypeFor[K]().Kind() == reflect.String, seed: maphash.MakeSeed()}
	for i := range h.keys {
		h.keys[i] = rand.Uint64()
	}
	if fs, ok := plainFields(reflect.TypeFor[G](), 0, nil); ok && len(fs) > 0 {
		h.fields = fs
	}
	return h
}

// groupHash returns g's hash, the seed of its keys' hashes; h must be a
// hasher of G's (newHasher[G, ...]). Two equal values hash alike: their
// strings have the same bytes, their numbers the same bits, and padding is
// never read.
func groupHash[G comparable](h *hasher, g G) uint64 {
	if h.fields == nil {
		return maphash.Comparable(h.seed, g)
	}
	p := unsafe.Pointer(&g)
	s := h.keys[3]
	for _, f := range h.fields {
		q := unsafe.Add(p, f.off)
		var v uint64
		switch f.size {
		case 0:
			v = maphash.Comparable(h.seed, *(*string)(q))
		case 1:
			v = uint64(*(*uint8)(q))
		case 2:
			v = uint64(*(*uint16)(q))
		case 4:
			v = uint64(*(*uint32)(q))
		default:
			v = *(*uint64)(q)
		}
		s = mix(v^h.keys[1], s^h.keys[2])
	}
	return s
}

// plainFields returns the parts of a value of type t that groupHash hashes
// itself, and whether it can: t is a string, an integer or a boolean, or a
// struct or array of such. (A float is left to maphash: two floats of
// different bits can be equal, 0 and -0, and one can differ from itself.)
func plainFields(t reflect.Type, off uintptr, fs []plainField) ([]plainField, bool) {
	switch t.Kind() {
	case reflect.String:
		return append(fs, plainField{off: off}), true
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return append(fs, plainField{off: off, size: t.Size()}), true
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			var ok bool
			if fs, ok = plainFields(f.Type, off+f.Offset, fs); !ok {
				return nil, false
			}
		}
		return fs, true
	case reflect.Array:
		for i := range t.Len() {
			var ok bool
			if fs, ok = plainFields(t.Elem(), off+uintptr(i)*t.Elem().Size(), fs); !ok {
				return nil, false
			}
		}
		return fs, true
	}
	return nil, false
}

// keyHash returns the hash of key k in the group whose hash is gh.
func keyHash[K comparable](h *hasher, gh uint64, k K) uint64 {
	if h.strings {
		// K is a string type: its value is a string.
		return strHash(*(*string)(unsafe.Pointer(&k)), gh, &h.keys)
	}
	return mix(maphash.Comparable(h.seed, k)^h.keys[1], gh^h.keys[2])
}

// m5 is the runtime's constant of the same name.
const m5 = 0x1d8e4e27c47d124f

// strHash is memhashFallback of runtime/hash64.go (Go 1.26) over s, with
// keys in place of the runtime's hashkey and seed as the runtime's seed; the runtime's
// reads of unaligned words are binary.LittleEndian's here. That code is
// Copyright 2014 The Go Authors, under the BSD-style license at
// https://go.dev/LICENSE, and is inspired by wyhash
// (https://github.com/wangyi-fudan/wyhash).
func strHash(s string, seed uint64, keys *[4]uint64) uint64 {
	p := unsafe.Slice(unsafe.StringData(s), len(s))
	n := uint64(len(s))
	seed ^= keys[0]
	var a, b uint64
	switch {
	case n == 0:
		return seed
	case n < 4:
		a = uint64(p[0]) | uint64(p[n>>1])<<8 | uint64(p[n-1])<<16
	case n == 4:
		a = r4(p, 0)
		b = a
	case n < 8:
		a = r4(p, 0)
		b = r4(p, n-4)
	case n == 8:
		a = r8(p, 0)
		b = a
	case n <= 16:
		a = r8(p, 0)
		b = r8(p, n-8)
	default:
		// i is where the bytes not yet mixed in start, and l their number.
		i, l := uint64(0), n
		if l > 48 {
			seed1, seed2 := seed, seed
			for ; l > 48; l -= 48 {
				seed = mix(r8(p, i)^keys[1], r8(p, i+8)^seed)
				seed1 = mix(r8(p, i+16)^keys[2], r8(p, i+24)^seed1)
				seed2 = mix(r8(p, i+32)^keys[3], r8(p, i+40)^seed2)
				i += 48
			}
			seed ^= seed1 ^ seed2
		}
		for ; l > 16; l -= 16 {
			seed = mix(r8(p, i)^keys[1], r8(p, i+8)^seed)
			i += 16
		}
		// The last 16 bytes, some of them mixed in already.
		a = r8(p, n-16)
		b = r8(p, n-8)
	}
	return mix(m5^n, mix(a^keys[1], b^seed))
}

func r4(p []byte, i uint64) uint64 { return uint64(binary.LittleEndian.Uint32(p[i:])) }
func r8(p []byte, i uint64) uint64 { return binary.LittleEndian.Uint64(p[i:]) }

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
