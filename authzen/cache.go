package authzen

import (
	"crypto/sha256"
	"time"

	"github.com/orgauthz/orgauthz/cache"
	"github.com/orgauthz/orgauthz/internal/transport"
)

// The decision cache is package cache's, grouped by the PEP's credential
// (two credentials never share an entry; a credential's entries go
// together on SetToken, ClearToken or a 401) and keyed by the canonical
// JSON of the whole evaluation: subject, action, resource and context with
// their properties, map keys sorted. Memory is bounded in entries and
// bytes: a credential longer than maxCachedToken is not cached, a key
// longer than maxExactKey is replaced by its SHA-256 digest, and only
// decisions without a response context (whose size the PDP chooses) are
// kept.
const (
	maxCachedToken = 8 << 10
	maxExactKey    = 512
)

type decisionCache struct {
	lru               *cache.Cache[transport.Ident, string, bool]
	allowTTL, denyTTL time.Duration
}

func newDecisionCache(size int, maxBytes int64, allowTTL, denyTTL time.Duration) (*decisionCache, error) {
	if size == 0 {
		return nil, nil
	}
	lru, err := cache.New[transport.Ident, string, bool](size, cache.WithMaxBytes(maxBytes))
	if err != nil {
		return nil, err
	}
	return &decisionCache{lru: lru, allowTTL: allowTTL, denyTTL: denyTTL}, nil
}

// cacheKey returns the key of an evaluation whose canonical JSON is body:
// the text itself when short, else a zero byte and its digest (no JSON
// text starts with a zero byte).
func cacheKey(body []byte) string {
	if len(body) <= maxExactKey {
		return string(body)
	}
	sum := sha256.Sum256(body)
	return "\x00" + string(sum[:])
}

func (d *decisionCache) get(id transport.Ident, key string) (allowed, ok bool) {
	if d == nil || len(id.Token) > maxCachedToken {
		return false, false
	}
	return d.lru.Get(id, key)
}

// writer returns what stores a request's answers: it stores nothing once
// the credential's entries were purged after it was made, so an answer in
// flight cannot bring a purged credential's decisions back. Nil stores
// nothing.
func (d *decisionCache) writer(id transport.Ident) *cache.Writer[transport.Ident, string, bool] {
	if d == nil || len(id.Token) > maxCachedToken {
		return nil
	}
	return d.lru.Writer(id)
}

// store keeps a PDP decision that came without context or error.
func (d *decisionCache) store(w *cache.Writer[transport.Ident, string, bool], id transport.Ident, key string, it item) {
	if w == nil || it.err != nil || len(it.context) > 0 {
		return
	}
	ttl := d.denyTTL
	if it.allowed {
		ttl = d.allowTTL
	}
	w.Add(key, it.allowed, ttl, int64(len(id.Token)+len(key)))
}

func (d *decisionCache) purge(id transport.Ident) {
	if d != nil {
		d.lru.RemoveGroup(id)
	}
}

func (d *decisionCache) stats() (s cache.Stats, n int) {
	if d == nil {
		return cache.Stats{}, 0
	}
	return d.lru.Stats(), d.lru.Len()
}
