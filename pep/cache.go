package pep

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/orgauthz/orgauthz/internal/core"
)

// The decision cache is internal/core's, grouped by token; below the
// token, an entry's key is the pair and the request context. No caller
// chooses what one entry costs (core.MaxCachedToken bounds the token):
//
//   - a pair whose resource and scope together are longer than
//     maxCachedNames is never cached;
//   - a request context longer than maxExactContext is keyed by its SHA-256
//     digest instead of its text;
//   - a ListGranted's wildcards are remembered by their drop (wildcardsCover)
//     as at most maxDropWildcards of them in at most maxDropName bytes.
const (
	maxCachedNames   = 512
	maxExactContext  = 512
	maxDropName      = 4096
	maxDropWildcards = 32
)

// The longest key (keyLen) is within the bound WithCacheMaxBytes's least
// value is computed for; the build fails otherwise.
const _ = uint(core.MaxCachedKey - (4 + maxCachedNames + maxExactContext))

// A cache key holds the pair and the request context (contextKey's form of
// it) in one string, so that a hit hashes and compares one string rather
// than three. It holds the lengths of the resource and the scope (two
// bytes each, big-endian; both are at most maxCachedNames) and then the
// three texts, so that no two keys run together: ("ab", "c") and ("a",
// "bc") differ in their first bytes.

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

// wildcardsCover returns what a request asking queries under the request
// context key ctxKey covers of its token's cached decisions, which it
// drops (core.SendWide): the pairs one of its wildcards covers, under its
// own request context only (a-fix16b F1: under every context, a wildcard
// fenced another context's answers, which its own answer never stores
// again, and a concurrent call's valid GRANTs failed closed). Its name is
// the context and the wildcards, so that the same wildcards asked again
// are remembered once (a-fix16b F2), written so that no two sets of them
// share one (named): the cache keeps the first coverage of a name.
//
// What the cache remembers of a drop is bounded: a wildcard whose names
// are longer than maxCachedNames covers no pair the cache holds (every
// pair it covers is longer still: cacheablePair), and is left out; and
// wildcards more than maxDropWildcards, or whose name would pass
// maxDropName, are remembered as the one wildcard of every pair of the
// context, which covers all they cover (a-drop17b: a group remembers 1,024
// drops while an older request is open, and each held its wildcards whole,
// however long; a-fix17b F2: or a thousand short ones, 37 KB a drop).
func wildcardsCover(queries []pair, ctxKey string) core.Wide {
	var wide []pair
	name := named(nil, ctxKey)
	for _, q := range queries {
		if q.wildcard() && len(q.resource)+len(q.scope) <= maxCachedNames {
			wide = append(wide, q)
			name = named(named(name, q.resource), q.scope)
		}
	}
	if len(name) > maxDropName || len(wide) > maxDropWildcards {
		wide = []pair{{resource: "*"}}
		name = named(named(named(nil, ctxKey), "*"), "")
	}
	return core.Wide{Name: string(name), Covers: func(key string) bool {
		p, rest, ok := keyPair(key)
		if !ok {
			return true // not a key of ours: dropped, failing closed
		}
		if rest != ctxKey {
			return false
		}
		for _, w := range wide {
			if w.covers(p) {
				return true
			}
		}
		return false
	}}
}

// named appends s to a drop's name, its length first in full (a varint),
// so that a name is one and only one sequence of texts. A cache key's
// two-byte lengths are enough for the names a key holds (maxCachedNames),
// not for a wildcard's, whose names are unbounded: with them, one resource
// 65,538 bytes long spelled four wildcards' names, and a call's drop was
// taken for another's whose coverage the cache kept.
func named(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// keyPair returns the pair a cache key (appendKey) is about, and the
// request context key after it.
func keyPair(key string) (p pair, ctxKey string, ok bool) {
	if len(key) < 4 {
		return pair{}, "", false
	}
	nr, ns := int(key[0])<<8|int(key[1]), int(key[2])<<8|int(key[3])
	if len(key) < 4+nr+ns {
		return pair{}, "", false
	}
	return pair{resource: key[4 : 4+nr], scope: key[4+nr : 4+nr+ns]}, key[4+nr+ns:], true
}

// hitKeyBytes is the length of the key a lookup builds on its stack; a
// longer one borrows a buffer from longKeys, so that no lookup allocates.
const hitKeyBytes = 128

var longKeys = sync.Pool{New: func() any {
	b := make([]byte, 0, 4+maxCachedNames+maxExactContext)
	return &b
}}

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

// cacheablePair reports whether a pair may be cached.
func cacheablePair(p pair) bool {
	return len(p.resource)+len(p.scope) <= maxCachedNames && !p.wildcard()
}

// get returns the live status cached for p under a request context key
// (contextKey), read through a call's group (nil reads nothing); it
// allocates nothing.
func get(g *core.Group, ctxKey string, p pair) (Status, bool) {
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
	return status(g.Get(transient(appendKey(buf[:0], p, ""))))
}

// confirm is core.Confirm for p under a request context key, read through
// g (the call's token's entries as they are now): the Status that holds of
// a GRANT read before the call's last wait, a hit or an answer's, and
// whether one does. A pair the cache cannot hold holds nothing: it is
// asked again (reconfirm).
func confirm(g *core.Group, ctxKey string, p pair) (Status, bool) {
	if g == nil || !cacheablePair(p) {
		return Deny, false
	}
	var buf [hitKeyBytes]byte
	return status(core.Confirm(g, transient(appendKey(buf[:0], p, ctxKey))))
}

// getKey is get for any key: with a request context, or longer than a
// lookup builds on its stack.
func getKey(g *core.Group, ctxKey string, p pair) (Status, bool) {
	if keyLen(p, ctxKey) > hitKeyBytes {
		bp := longKeys.Get().(*[]byte)
		*bp = appendKey((*bp)[:0], p, ctxKey)
		s, ok := status(g.Get(transient(*bp)))
		longKeys.Put(bp)
		return s, ok
	}
	var buf [hitKeyBytes]byte
	return status(g.Get(transient(appendKey(buf[:0], p, ctxKey))))
}

// status is the Status of a cached verdict: only GRANT and DENY are cached.
func status(allowed, ok bool) (Status, bool) {
	if allowed {
		return Grant, ok
	}
	return Deny, ok
}

// transient returns a key that shares b's bytes, for a lookup, which keeps
// no key (cache.Group.Get), or an addition, which keeps its own copy
// (cache.Writer.Add): the bytes are on the caller's stack, go back to a
// pool once the lookup returns, or are reused for the next key.
func transient(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// store replaces what the cache holds for every pair the gateway's answer
// is about (the pairs asked for, and those a wildcard covers) with the
// answer: a GRANT or DENY the answer lists exactly once (answer.decide) is
// kept; any other answer for the pair (ERROR, the pair listed twice or not
// at all) is not, and removes the older entry, so that no older verdict is
// served in place of the gateway's newer one. It is the only step that
// writes an answer to the cache. A pair a wildcard covered and the answer
// no longer lists has no entry here: its older verdict was dropped before
// the request was sent (core.SendWide).
func store(w *core.Writer, cl *call, a *answer) {
	if w == nil {
		return
	}
	w.Used() // read whole, pairs it does not cache included
	var buf []byte
	for _, e := range a.entries {
		p, l := e.p, e.l
		if !cacheablePair(p) {
			continue
		}
		// The cache keeps its own copy of the key (cache.Writer.Add), so
		// the key is a view of one buffer, reused for the next pair.
		buf = appendKey(buf[:0], p, cl.ctxKey)
		if l.count == 1 && (l.status == Grant || l.status == Deny) {
			w.Add(transient(buf), l.status == Grant)
		} else {
			w.Forget(transient(buf))
		}
	}
}
