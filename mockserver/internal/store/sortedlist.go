package store

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
)

// SortedList is a list kept sorted as values are added and removed, for
// lists that may grow long, such as the departments under one parent: adding
// or removing a value costs O(log n), and a window of k values (a page)
// costs O(log n + k), where a sorted slice costs O(n) to insert into or
// delete from. It is a treap (a binary search tree balanced by random
// priorities) whose nodes count their subtree, so that values are found by
// position as well as by order. The order is given by the cmp of each
// change, which must be the same for all changes of one list and tell every
// two values apart. A nil *SortedList is an empty list for reading. Readers
// never change a list, so concurrent reads are safe.
type SortedList[T comparable] struct {
	root *treapNode[T]
}

type treapNode[T comparable] struct {
	v    T
	l, r *treapNode[T]
	n    int32 // values in this subtree
	prio uint32
}

func (t *treapNode[T]) size() int {
	if t == nil {
		return 0
	}
	return int(t.n)
}

func (t *treapNode[T]) fix() { t.n = int32(1 + t.l.size() + t.r.size()) }

// Len returns the number of values in the list.
func (s *SortedList[T]) Len() int {
	if s == nil {
		return 0
	}
	return s.root.size()
}

// At returns the value at position i, which must be in [0, Len()).
func (s *SortedList[T]) At(i int) T {
	t := s.root
	for {
		switch ls := t.l.size(); {
		case i < ls:
			t = t.l
		case i == ls:
			return t.v
		default:
			i -= ls + 1
			t = t.r
		}
	}
}

// Window returns the values at positions [lo, hi), clamped to the list, in
// order, in a new slice.
func (s *SortedList[T]) Window(lo, hi int) []T {
	lo, hi = max(lo, 0), min(hi, s.Len())
	if lo >= hi {
		return nil
	}
	return appendWindow(s.root, lo, hi, make([]T, 0, hi-lo))
}

// appendWindow appends the values of t at positions [lo, hi) of t's subtree.
func appendWindow[T comparable](t *treapNode[T], lo, hi int, dst []T) []T {
	for t != nil && lo < hi {
		ls := t.l.size()
		if lo < ls {
			dst = appendWindow(t.l, lo, min(hi, ls), dst)
		}
		if lo <= ls && ls < hi {
			dst = append(dst, t.v)
		}
		// Continue in the right subtree, iteratively.
		lo, hi = max(lo-ls-1, 0), hi-ls-1
		t = t.r
	}
	return dst
}

// All yields the values in order.
func (s *SortedList[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		if s != nil {
			walk(s.root, yield)
		}
	}
}

func walk[T comparable](t *treapNode[T], yield func(T) bool) bool {
	for ; t != nil; t = t.r {
		if !walk(t.l, yield) || !yield(t.v) {
			return false
		}
	}
	return true
}

// After yields, in order, the values that cmp places after v, which need
// not be in the list: a page read from a cursor. Finding the first costs
// O(log n), and each further value O(1) amortised, so k values cost
// O(log n + k) whatever the length of the list.
func (s *SortedList[T]) After(v T, cmp func(a, b T) int) iter.Seq[T] {
	return func(yield func(T) bool) {
		if s != nil {
			walkAfter(s.root, v, cmp, yield)
		}
	}
}

func walkAfter[T comparable](t *treapNode[T], v T, cmp func(a, b T) int, yield func(T) bool) bool {
	// Down the right spine past t and its left subtree while t is not
	// after v; at the first t that is, its left subtree may still hold
	// values after v, and its right subtree is after v whole.
	for t != nil && cmp(t.v, v) <= 0 {
		t = t.r
	}
	if t == nil {
		return true
	}
	return walkAfter(t.l, v, cmp, yield) && yield(t.v) && walk(t.r, yield)
}

// insert adds v, which must not be in the list, at its place by cmp.
func (s *SortedList[T]) insert(v T, cmp func(a, b T) int) {
	s.root = treapInsert(s.root, &treapNode[T]{v: v, n: 1, prio: rand.Uint32()}, cmp)
}

func treapInsert[T comparable](t, x *treapNode[T], cmp func(a, b T) int) *treapNode[T] {
	if t == nil {
		return x
	}
	if x.prio > t.prio {
		x.l, x.r = treapSplit(t, x.v, cmp)
		x.fix()
		return x
	}
	if cmp(x.v, t.v) < 0 {
		t.l = treapInsert(t.l, x, cmp)
	} else {
		t.r = treapInsert(t.r, x, cmp)
	}
	t.n++
	return t
}

// treapSplit splits t into the values before v and the others.
func treapSplit[T comparable](t *treapNode[T], v T, cmp func(a, b T) int) (before, after *treapNode[T]) {
	if t == nil {
		return nil, nil
	}
	if cmp(t.v, v) < 0 {
		t.r, after = treapSplit(t.r, v, cmp)
		t.fix()
		return t, after
	}
	before, t.l = treapSplit(t.l, v, cmp)
	t.fix()
	return before, t
}

// treapMerge joins a and b, every value of a coming before every value of b.
func treapMerge[T comparable](a, b *treapNode[T]) *treapNode[T] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.r = treapMerge(a.r, b)
		a.fix()
		return a
	default:
		b.l = treapMerge(a, b.l)
		b.fix()
		return b
	}
}

// remove removes v, found with cmp under its current sort key, and reports
// whether it was there.
func (s *SortedList[T]) remove(v T, cmp func(a, b T) int) bool {
	var removed bool
	s.root, removed = treapRemove(s.root, v, cmp)
	return removed
}

func treapRemove[T comparable](t *treapNode[T], v T, cmp func(a, b T) int) (*treapNode[T], bool) {
	if t == nil {
		return nil, false
	}
	var removed bool
	switch c := cmp(v, t.v); {
	case c < 0:
		t.l, removed = treapRemove(t.l, v, cmp)
	case c > 0:
		t.r, removed = treapRemove(t.r, v, cmp)
	case t.v != v:
		return t, false
	default:
		return treapMerge(t.l, t.r), true
	}
	if removed {
		t.n--
	}
	return t, removed
}

// check reports how the list breaks its own rules: values in cmp order,
// each counted once in its subtree's size, priorities as a heap (a node's
// is at least its children's).
func (s *SortedList[T]) check(cmp func(a, b T) int) error {
	if s == nil {
		return nil
	}
	var (
		prev  T
		pos   int // of the value visited next, in order
		errs  []error
		count func(t *treapNode[T]) int
	)
	count = func(t *treapNode[T]) int {
		if t == nil {
			return 0
		}
		for _, c := range []*treapNode[T]{t.l, t.r} {
			if c != nil && c.prio > t.prio {
				errs = append(errs, errors.New("priorities are not a heap"))
			}
		}
		n := count(t.l)
		if pos > 0 && cmp(prev, t.v) >= 0 {
			errs = append(errs, fmt.Errorf("not sorted at position %d", pos))
		}
		prev = t.v
		pos++
		n += 1 + count(t.r)
		if int(t.n) != n {
			errs = append(errs, fmt.Errorf("a node counts %d values for %d", t.n, n))
		}
		return n
	}
	count(s.root)
	return errors.Join(errs...)
}
