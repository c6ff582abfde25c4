// Package stripe holds a counter that many cores add to without sharing a
// cache line: its additions go to one of several padded cells. A cell is
// picked by the goroutine's stack address (goroutines run on distinct
// stacks, so goroutines on different cores mostly pick different cells, and
// each keeps to its own). The cache counts its hits and misses with it,
// and the client core (internal/core) its calls and decisions, so that
// cached Checks on different cores do not contend on one atomic word.
package stripe

import (
	"sync/atomic"
	"unsafe"
)

// cells is the number of cells; a power of two, more than the cores that
// usually add at once.
const cells = 8

// Counter counts up. The zero value is zero and ready to use; it must not
// be copied after first use.
type Counter struct {
	cells [cells]struct {
		n atomic.Uint64
		_ [56]byte // one cell per 64-byte cache line
	}
}

// Add adds n.
func (c *Counter) Add(n uint64) {
	c.cells[cell()].n.Add(n)
}

// cell picks the calling goroutine's cell by the address of a variable on
// its stack. The address only picks a cell; it is never dereferenced, and a
// goroutine whose stack moves simply picks another one.
func cell() int {
	var here byte
	return int((uintptr(unsafe.Pointer(&here)) >> 12) % cells)
}

// Load returns the sum of every addition so far. It is not a snapshot:
// additions made while it runs may or may not be counted.
func (c *Counter) Load() uint64 {
	var n uint64
	for i := range c.cells {
		n += c.cells[i].n.Load()
	}
	return n
}
