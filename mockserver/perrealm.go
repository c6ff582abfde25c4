package mockserver

import "sync"

// perRealm gives every realm a value of its own, made by newValue on the
// realm's first use, so that what one realm does to its value (fill it,
// lock it) never reaches another realm's. Callers ask only for realms that
// exist: the realm of a token or request already checked.
type perRealm[T any] struct {
	newValue func() (T, error)

	mu sync.RWMutex
	m  map[string]T
}

// newPerRealm returns a perRealm whose values newValue makes.
func newPerRealm[T any](newValue func() (T, error)) *perRealm[T] {
	return &perRealm[T]{newValue: newValue, m: map[string]T{}}
}

// get returns realm's value, making it on first use.
func (p *perRealm[T]) get(realm string) (T, error) {
	p.mu.RLock()
	v, ok := p.m[realm]
	p.mu.RUnlock()
	if ok {
		return v, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[realm]; ok {
		return v, nil
	}
	v, err := p.newValue()
	if err != nil {
		return v, err
	}
	p.m[realm] = v
	return v, nil
}

// lookup returns realm's value if it was made.
func (p *perRealm[T]) lookup(realm string) (T, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.m[realm]
	return v, ok
}

// len returns how many realms have a value.
func (p *perRealm[T]) len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.m)
}

// each calls f with every realm's value, under a read lock: f must not
// call p's other methods.
func (p *perRealm[T]) each(f func(realm string, v T)) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for realm, v := range p.m {
		f(realm, v)
	}
}

// drop removes realm's value and returns it.
func (p *perRealm[T]) drop(realm string) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[realm]
	delete(p.m, realm)
	return v, ok
}
