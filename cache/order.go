package cache

import "time"

// The order of answers. A Writer's values are kept in the order they were
// asked for, not the order they arrive in (see add): an entry records when
// its value was asked for, and a value asked for earlier does not replace
// it. A value that is not kept (a ttl that is not positive) leaves no
// entry to compare with, so the group remembers when its key was last
// answered that way, for as long as a writer made before that is open:
// those writers are the only ones that can still bring an older value.
// Nothing else is fenced: a value not kept under one key never stops an
// older writer's value under another.

// writerList is a group's open writers, in the order of their making.
type writerList[G, K comparable, V any] struct {
	first, last *Writer[G, K, V]
}

// open adds w, made at w.made, in its place: after every writer made no
// later (so first is the oldest open writer even if an injected clock
// stepped back). c.mu must be held.
func (l *writerList[G, K, V]) open(w *Writer[G, K, V]) {
	at := l.last
	for at != nil && at.made > w.made {
		at = at.prev
	}
	w.prev = at
	if at == nil {
		w.next, l.first = l.first, w
	} else {
		w.next, at.next = at.next, w
	}
	if w.next == nil {
		l.last = w
	} else {
		w.next.prev = w
	}
}

// close takes w out of the list; c.mu must be held.
func (l *writerList[G, K, V]) close(w *Writer[G, K, V]) {
	if w.prev == nil {
		l.first = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.last = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}

// forgets remembers when keys of a group were last answered with a value
// not kept, by the key's hash (a collision only refuses more), while a
// writer made before is open.
type forgets struct {
	newest map[uint64]time.Duration
	// marks lists the same in the order they were made, for pruning;
	// from start on.
	marks []forgetMark
	start int
}

type forgetMark struct {
	h    uint64
	made time.Duration
}

// forgot notes that the key of hash h was answered with a value not kept,
// asked for at made, when a writer made before is open; c.mu must be held.
func (grp *Group[G, K, V]) forgot(h uint64, made time.Duration) {
	if grp.writers.first == nil || grp.writers.first.made >= made {
		return // no open writer can bring a value older than it
	}
	f := grp.forgets
	if f == nil {
		f = &forgets{newest: make(map[uint64]time.Duration)}
		grp.forgets = f
	}
	if made > f.newest[h] {
		f.newest[h] = made
	}
	f.marks = append(f.marks, forgetMark{h, made})
}

// superseded reports whether a value under the key of hash h asked for at
// made is older than the key's last answer that was not kept; c.mu must be
// held.
func (grp *Group[G, K, V]) superseded(h uint64, made time.Duration) bool {
	return grp.forgets != nil && made < grp.forgets.newest[h]
}

// prune drops what no open writer is older than; c.mu must be held.
func (grp *Group[G, K, V]) prune() {
	f := grp.forgets
	if f == nil {
		return
	}
	if grp.writers.first == nil {
		grp.forgets = nil
		return
	}
	oldest := grp.writers.first.made
	for f.start < len(f.marks) && f.marks[f.start].made <= oldest {
		m := f.marks[f.start]
		if f.newest[m.h] == m.made {
			delete(f.newest, m.h)
		}
		f.start++
	}
	if f.start > len(f.marks)/2 { // keep the slice's dead front small
		f.marks = append(f.marks[:0], f.marks[f.start:]...)
		f.start = 0
	}
}
