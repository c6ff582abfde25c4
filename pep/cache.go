package pep

import (
	"crypto/sha256"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/orgauthz/orgauthz/cache"
)

// The decision cache holds gateway GRANT and DENY answers, grouped by token
// so that a token's entries go together (SetToken, ClearToken, a 401) in
// time proportional to their number. Its memory is bounded in entries and
// in bytes, and no caller chooses what one entry costs:
//
//   - a token longer than maxCachedToken is never cached;
//   - a pair whose resource and scope together are longer than
//     maxCachedNames is never cached;
//   - a request context longer than maxExactContext is keyed by its SHA-256
//     digest instead of its text.
//
// Tokens are compared whole, never by hash: two tokens never share an entry.
const (
	maxCachedToken  = 8 << 10
	maxCachedNames  = 512
	maxExactContext = 512
)

// cacheKey is the part of an entry's key below its token: the pair and the
// request context (contextKey's form of it) in one string, so that a hit
// hashes and compares one string rather than three. It holds the lengths
// of the resource and the scope (two bytes each, big-endian; both are at
// most maxCachedNames) and then the three texts, so that no two keys run
// together: ("ab", "c") and ("a", "bc") differ in their first bytes.
type cacheKey string

// tokenEntries is a handle on one token's entries in the decision cache.
type tokenEntries = cache.Group[tokenIdent, cacheKey, Status]

// keyLen is the length of the cache key of p under a request context key.
func keyLen(p pair, ctxKey string) int {
	return 4 + len(p.resource) + len(p.scope) + len(ctxKey)
}

// appendKey appends the cache key of p under a request context key to b.
func appendKey(b []byte, p pair, ctxKey string) []byte {
	b = append(b, byte(len(p.resource)>>8), byte(len(p.resource)), byte(len(p.scope)>>8), byte(len(p.scope)))
	b = append(b, p.resource...)
	b = append(b, p.scope...)
	return append(b, ctxKey...)
}

// hitKeyBytes is the length of the key a lookup builds on its stack; a
// longer one borrows a buffer from longKeys, so that no lookup allocates.
const hitKeyBytes = 128

var longKeys = sync.Pool{New: func() any {
	b := make([]byte, 0, 4+maxCachedNames+maxExactContext)
	return &b
}}

// decisionCache wraps the generic cache with the rules above. A nil
// *decisionCache is a disabled cache.
type decisionCache struct {
	lru               *cache.Cache[tokenIdent, cacheKey, Status]
	grantTTL, denyTTL time.Duration
}

// newDecisionCache returns a cache of size entries and maxBytes bytes (nil
// for size 0) that reads the time from now, or the real clock when now is
// nil.
func newDecisionCache(size int, maxBytes int64, grantTTL, denyTTL time.Duration, now func() time.Time) (*decisionCache, error) {
	if size == 0 {
		return nil, nil
	}
	opts := []cache.Option{cache.WithMaxBytes(maxBytes)}
	if now != nil {
		opts = append(opts, cache.WithClock(now))
	}
	lru, err := cache.New[tokenIdent, cacheKey, Status](size, opts...)
	if err != nil {
		return nil, err
	}
	return &decisionCache{lru: lru, grantTTL: grantTTL, denyTTL: denyTTL}, nil
}

// contextKey returns the context part of a call's cache keys: "" for no
// context (the commonest key hashes fastest), the canonical JSON of a short
// one, and for a longer one a zero byte and its raw SHA-256 digest, which
// no JSON text can pose as (JSON starts with '{').
func contextKey(contextJSON string) string {
	switch {
	case contextJSON == noContext:
		return ""
	case len(contextJSON) <= maxExactContext:
		return contextJSON
	}
	sum := sha256.Sum256([]byte(contextJSON))
	return "\x00" + string(sum[:])
}

// cacheable reports whether a call's token and a pair may be cached.
func cacheable(id tokenIdent, p pair) bool {
	return len(id.Token) <= maxCachedToken && cacheablePair(p)
}

// cacheablePair reports whether a pair may be cached (for a token that may
// be: lookup, pin and writer return nil for one that may not).
func cacheablePair(p pair) bool {
	return len(p.resource)+len(p.scope) <= maxCachedNames && !p.wildcard()
}

// lookup returns the handle through which a call with a per-call token
// reads the token's entries (one hash of the token per call, not per
// pair); nil for a disabled cache or a token too long to cache. The
// client's own token has its pinned handle instead (pin).
func (d *decisionCache) lookup(id tokenIdent) *tokenEntries {
	if d == nil || len(id.Token) > maxCachedToken {
		return nil
	}
	return d.lru.Lookup(id)
}

// pin returns a handle on the entries of the client's own token, held from
// SetToken until the token is replaced (unpin), so that its hits never hash
// the token. Nil for a disabled cache or a token too long to cache.
func (d *decisionCache) pin(id tokenIdent) *tokenEntries {
	if d == nil || len(id.Token) > maxCachedToken {
		return nil
	}
	return d.lru.Pin(owned(id))
}

// owned returns id with a token of its own. A token is often cut from a
// larger string (a header, a configuration file); the cache keeps it as
// long as its entries live and counts only its length, so it must not keep
// what it was cut from.
func owned(id tokenIdent) tokenIdent {
	id.Token = strings.Clone(id.Token)
	return id
}

// get returns the live status cached for p under a request context key
// (contextKey), read through a call's group (nil reads nothing); it
// allocates nothing.
func (d *decisionCache) get(g *tokenEntries, ctxKey string, p pair) (Status, bool) {
	if g == nil || !cacheablePair(p) {
		return Deny, false
	}
	if ctxKey != "" || keyLen(p, "") > hitKeyBytes {
		return getKey(g, ctxKey, p)
	}
	// The commonest key, without a request context, is built here, where
	// its shape is known: going through getKey costs a cached Check about
	// a tenth more.
	var buf [hitKeyBytes]byte
	return g.Get(transient(appendKey(buf[:0], p, "")))
}

// getKey is get for any key: with a request context, or longer than a
// lookup builds on its stack.
func getKey(g *tokenEntries, ctxKey string, p pair) (Status, bool) {
	if keyLen(p, ctxKey) > hitKeyBytes {
		bp := longKeys.Get().(*[]byte)
		*bp = appendKey((*bp)[:0], p, ctxKey)
		s, ok := g.Get(transient(*bp))
		longKeys.Put(bp)
		return s, ok
	}
	var buf [hitKeyBytes]byte
	return g.Get(transient(appendKey(buf[:0], p, ctxKey)))
}

// transient returns a key that shares b's bytes, for a lookup, which keeps
// no key (cache.Group.Get): the bytes are on the caller's stack or go back
// to a pool once the lookup returns.
func transient(b []byte) cacheKey {
	return cacheKey(unsafe.String(unsafe.SliceData(b), len(b)))
}

// writer returns what stores a request's answers for cl's token: it stores
// nothing once the token's entries were purged after it was made, so that
// an answer in flight cannot bring a purged token's decisions back. Close it
// when the request is over. A nil writer (disabled cache) stores nothing.
func (d *decisionCache) writer(cl *call) *cache.Writer[tokenIdent, cacheKey, Status] {
	if d == nil || len(cl.id.Token) > maxCachedToken {
		return nil
	}
	return d.lru.Writer(owned(cl.id))
}

// store keeps the gateway's GRANT and DENY answers through w: the pairs
// the answer lists exactly once (answer.decide).
func (d *decisionCache) store(w *cache.Writer[tokenIdent, cacheKey, Status], cl *call, a *answer) {
	if w == nil {
		return
	}
	for _, e := range a.entries {
		p, l := e.p, e.l
		if l.count != 1 || !cacheable(cl.id, p) {
			continue
		}
		var ttl time.Duration
		switch l.status {
		case Grant:
			ttl = d.grantTTL
		case Deny:
			ttl = d.denyTTL
		default:
			continue
		}
		// The key is a string of its own: the names are the caller's,
		// often cut from a request's path or headers, and must not keep
		// more than the bytes the budget counts.
		key := cacheKey(appendKey(make([]byte, 0, keyLen(p, cl.ctxKey)), p, cl.ctxKey))
		w.Add(key, l.status, ttl, int64(len(cl.id.Token)+len(key)))
	}
}

// purge removes every entry of one token, and fences its writers.
func (d *decisionCache) purge(id tokenIdent) {
	if d == nil {
		return
	}
	d.lru.RemoveGroup(id)
}

// stats reports the cache's counters, entries and bytes.
func (d *decisionCache) stats() (cache.Stats, int, int64) {
	if d == nil {
		return cache.Stats{}, 0, 0
	}
	return d.lru.Stats(), d.lru.Len(), d.lru.Bytes()
}
