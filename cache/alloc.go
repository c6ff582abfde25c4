package cache

import "unsafe"

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
