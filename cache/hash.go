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
// A pair's hash is its key's hash seeded with its group's hash (groupHash,
// the runtime's own hash of the group's type through maphash.Comparable):
// a [Group] handle keeps its group's hash, so that a hit through it hashes
// the key alone, and a lookup by group value hashes the group once and
// then the key.
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
}

func newHasher[K comparable]() hasher {
	h := hasher{strings: reflect.TypeFor[K]().Kind() == reflect.String, seed: maphash.MakeSeed()}
	for i := range h.keys {
		h.keys[i] = rand.Uint64()
	}
	return h
}

// groupHash returns g's hash, the seed of its keys' hashes.
func groupHash[G comparable](h *hasher, g G) uint64 {
	return maphash.Comparable(h.seed, g)
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
