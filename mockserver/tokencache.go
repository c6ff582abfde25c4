package mockserver

import (
	"crypto/sha256"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// maxVerifiedTokens is the verified-token caches' budget, shared by every
// realm: 2^17 entries of about a kilobyte and a quarter each at most.
const maxVerifiedTokens = 1 << 17

// verifiedTokens remembers tokens whose signature checked out, by the
// SHA-256 of the token, so that a token used again skips the signature
// check. Everything else (realm live, key current, issuer, exp and nbf,
// DPoP binding) is checked on every use. Claims in it are shared and
// read-only.
//
// Each realm has an LRU of its own, so no realm's callers wait on another
// realm's lock, and all of them share one budget of entries, so the memory
// they take is bounded however many realms there are. When the budget is
// full, a new entry costs one old one: the adding realm's least recently
// used token if the realm holds its fair share (the budget divided by the
// realms holding tokens) or more, else that of the realm holding the most.
// A realm within its fair share so loses no token to another realm's
// callers, however many distinct tokens they present; more distinct
// callers than a realm may hold cost a signature check each for the ones
// forgotten, never a check for everyone.
type verifiedTokens struct {
	budget int
	total  atomic.Int64 // entries in all realms' caches
	realms *perRealm[*lru.Cache[[sha256.Size]byte, verifiedToken]]
}

type verifiedToken struct {
	kid    string
	claims *issuer.Claims
}

// newVerifiedTokens returns empty caches that hold budget entries in all.
func newVerifiedTokens(budget int) *verifiedTokens {
	return &verifiedTokens{budget: budget, realms: newPerRealm(func() (*lru.Cache[[sha256.Size]byte, verifiedToken], error) {
		// Sized to the whole budget: the shared budget, not the LRU's
		// own size, decides what is forgotten.
		return lru.New[[sha256.Size]byte, verifiedToken](budget)
	})}
}

// get returns the claims of a token of realm verified before with key kid
// for issuer iss.
func (v *verifiedTokens) get(realm string, key [sha256.Size]byte, kid, iss string) (*issuer.Claims, bool) {
	c, ok := v.realms.lookup(realm)
	if !ok {
		return nil, false
	}
	e, ok := c.Get(key)
	if !ok || e.kid != kid || e.claims.Issuer != iss {
		return nil, false
	}
	return e.claims, true
}

// add remembers a token of realm whose signature checked out, and forgets
// one other token when that takes the caches over their budget.
func (v *verifiedTokens) add(realm string, key [sha256.Size]byte, t verifiedToken) {
	c, err := v.realms.get(realm)
	if err != nil { // only for a budget below 1: remember nothing
		return
	}
	if had, evicted := c.ContainsOrAdd(key, t); had || evicted {
		return // there already, or one of the realm's own made room
	}
	if v.total.Add(1) <= int64(v.budget) {
		return
	}
	victim := c
	if n := v.realms.len(); c.Len()*n < v.budget {
		v.realms.each(func(_ string, o *lru.Cache[[sha256.Size]byte, verifiedToken]) {
			if o.Len() > victim.Len() {
				victim = o
			}
		})
	}
	if _, _, ok := victim.RemoveOldest(); ok {
		v.total.Add(-1)
	}
}

// remove forgets one token of realm (it was revoked). The check that
// refuses a revoked token does not depend on it: it only gives the entry
// back to the budget.
func (v *verifiedTokens) remove(realm string, key [sha256.Size]byte) {
	c, ok := v.realms.lookup(realm)
	if !ok {
		return
	}
	if c.Remove(key) {
		v.total.Add(-1)
	}
}

// forget drops a realm's cache (its tenant was decommissioned: its tokens
// are refused from then on) and gives its entries back to the budget. A
// token of the realm verified while it is forgotten may stay counted: the
// budget can only err on the small side.
func (v *verifiedTokens) forget(realm string) {
	if c, ok := v.realms.drop(realm); ok {
		v.total.Add(-int64(c.Len()))
	}
}
