// Package stripe holds what many cores use without sharing a cache line:
// a counter whose additions go to one of several padded cells, and a
// reader/writer lock whose readers lock one of several. A cell is
// picked by the goroutine's stack address (goroutines run on distinct
// stacks, so goroutines on different cores mostly pick different cells, and
// each keeps to its own). The cache counts its hits with it, and the pep
// client its calls and decisions, so that cached Checks on different cores
// do not contend on one atomic word.
package stripe

import (
	"sync"
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

// RWMutex is a reader/writer lock whose readers lock one of several padded
// cells, picked as Counter picks its cells, so that readers on different
// cores do not write one shared word (a sync.RWMutex's reader count is
// one, and its cache line moves between the cores of every reader). A
// writer locks every cell, in order: writing costs a few times a
// sync.RWMutex's Lock, for reads that scale with cores. The zero value is
// unlocked; it must not be copied after first use.
type RWMutex struct {
	cells [cells]struct {
		mu sync.RWMutex
		_  [64 - unsafe.Sizeof(sync.RWMutex{})%64]byte
	}
}

// RLock locks one cell for reading and returns it, to be given to
// RUnlock.
func (m *RWMutex) RLock() int {
	i := cell()
	m.cells[i].mu.RLock()
	return i
}

// RUnlock unlocks the cell RLock returned.
func (m *RWMutex) RUnlock(cell int) { m.cells[cell].mu.RUnlock() }

// Lock locks every cell for writing.
func (m *RWMutex) Lock() {
	for i := range m.cells {
		m.cells[i].mu.Lock()
	}
}

// Unlock unlocks every cell.
func (m *RWMutex) Unlock() {
	for i := range m.cells {
		m.cells[i].mu.Unlock()
	}
}
