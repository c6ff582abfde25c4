package pep

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/cache"
)

// cacheKey identifies one cached decision. It holds the full token, so two
// tokens never share an entry: the map underneath compares keys exactly,
// whatever their hashes. The realm and client ID are not in the key because
// each Client owns its cache and never changes them. context is the
// canonical JSON of the request context (exact, not a hash, for the same
// reason as the token).
type cacheKey struct {
	id       tokenIdent
	resource string
	scope    string
	context  string
}

// decisionCache stores gateway GRANT and DENY answers. A nil
// *decisionCache is a disabled cache.
type decisionCache struct {
	lru               *cache.Cache[cacheKey, Status]
	grantTTL, denyTTL time.Duration

	// mu orders stores against purges: a purge bumps gen, and an answer
	// whose request started before the purge is not stored after it, so a
	// purged token's decisions cannot come back from a request in flight.
	mu  sync.Mutex
	gen atomic.Uint64
}

// newDecisionCache returns a cache of size entries (nil for size 0) that
// reads the time from now, or from the real clock when now is nil.
func newDecisionCache(size int, grantTTL, denyTTL time.Duration, now func() time.Time) (*decisionCache, error) {
	if size == 0 {
		return nil, nil
	}
	var opts []cache.Option
	if now != nil {
		opts = append(opts, cache.WithClock(now))
	}
	lru, err := cache.New[cacheKey, Status](size, opts...)
	if err != nil {
		return nil, err
	}
	return &decisionCache{lru: lru, grantTTL: grantTTL, denyTTL: denyTTL}, nil
}

// get returns a live cached status; it allocates nothing.
func (d *decisionCache) get(k cacheKey) (Status, bool) {
	if d == nil {
		return Deny, false
	}
	return d.lru.Get(k)
}

// generation is read when a call starts and handed back to store.
func (d *decisionCache) generation() uint64 {
	if d == nil {
		return 0
	}
	return d.gen.Load()
}

// store keeps gateway answers (decisions without a Cause) that are GRANT or
// DENY, unless a purge happened since generation gen was read.
func (d *decisionCache) store(gen uint64, id tokenIdent, context string, answers [][]Decision) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen.Load() != gen {
		return
	}
	for _, as := range answers {
		for _, a := range as {
			if a.Cause != nil {
				continue
			}
			k := cacheKey{id: id, resource: a.Resource, scope: a.Scope, context: context}
			switch a.Status {
			case Grant:
				d.lru.Add(k, Grant, d.grantTTL)
			case Deny:
				d.lru.Add(k, Deny, d.denyTTL)
			}
		}
	}
}

// purge removes every entry of one token.
func (d *decisionCache) purge(id tokenIdent) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen.Add(1)
	d.lru.RemoveFunc(func(k cacheKey, _ Status) bool { return k.id == id })
}

func (d *decisionCache) stats() (cache.Stats, int) {
	if d == nil {
		return cache.Stats{}, 0
	}
	return d.lru.Stats(), d.lru.Len()
}
