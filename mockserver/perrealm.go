package mockserver

import (
	"sync"
	"sync/atomic"
)

// perRealm gives every realm a value of its own, made by newValue on the
// realm's first use, so that what one realm does to its value (fill it,
// lock it) never reaches another realm's. Callers ask only for realms that
// exist: the realm of a token or request already checked.
//
// Values are found in a sync.Map, which a lookup reads without a lock: a
// read lock is a write to memory that every core shares, and every request
// looks up a value or two. mu orders the changes (making a value,
// dropping one) and n counts the values.
type perRealm[T any] struct {
	newValue func() (T, error)

	mu sync.Mutex
	m  sync.Map // realm -> T
	n  atomic.Int64
}

// newPerRealm returns a perRealm whose values newValue makes.
func newPerRealm[T any](newValue func() (T, error)) *perRealm[T] {
	return &perRealm[T]{newValue: newValue}
}

// get returns realm's value, making it on first use.
func (p *perRealm[T]) get(realm string) (T, error) {
	if v, ok := p.lookup(realm); ok {
		return v, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.lookup(realm); ok {
		return v, nil
	}
	v, err := p.newValue()
	if err != nil {
		return v, err
	}
	p.m.Store(realm, v)
	p.n.Add(1)
	return v, nil
}

// lookup returns realm's value if it was made.
func (p *perRealm[T]) lookup(realm string) (T, bool) {
	v, ok := p.m.Load(realm)
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// len returns how many realms have a value.
func (p *perRealm[T]) len() int { return int(p.n.Load()) }

// each calls f with every realm's value. f must not call p's other
// methods but lookup and len.
func (p *perRealm[T]) each(f func(realm string, v T)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m.Range(func(k, v any) bool {
		f(k.(string), v.(T))
		return true
	})
}

// drop removes realm's value and returns it.
func (p *perRealm[T]) drop(realm string) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m.LoadAndDelete(realm)
	if !ok {
		var zero T
		return zero, false
	}
	p.n.Add(-1)
	return v.(T), true
}
