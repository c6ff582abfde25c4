package mockserver

import (
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// maxVerifiedTokens is the verified-token caches' budget, shared by every
// realm: 2^17 entries of about two kilobytes each at most (the claims and
// the token).
const maxVerifiedTokens = 1 << 17

// hashedTail is how many of a token's last bytes its hash reads. A token
// ends in its signature, and two tokens the realm signed have the same
// signature only if their signed bytes hash alike under SHA-256, so the
// tail tells remembered tokens apart as well as the whole token would, at
// a tenth of the hashing. A token made to end like another (it is not the
// realm's) only shares its slot: the whole token is still compared.
const hashedTail = 64

// verifiedTokens remembers tokens whose signature checked out, so that a
// token used again skips the signature check. Everything else (realm live,
// key current, issuer, exp and nbf, DPoP binding) is checked on every use.
// Claims in it are shared and read-only.
//
// An entry is found by a 64-bit hash of the token's signature end
// (hashedTail) under a seed of the process's own (hash/maphash) and holds the
// token itself, which a lookup compares whole: two tokens that hash alike
// are two tokens, never one taken for the other, and a token that merely
// hashes like a remembered one is checked as if it were new. Only the
// token's bytes are compared: they are the signed header, claims and
// signature, so equal bytes are the token verified before.
//
// Each realm has an LRU of its own, so no realm's callers wait on another
// realm's lock, and all of them share one budget of entries, so the memory
// they take is bounded however many realms there are. When the budget is
// full, a new entry costs one old one: the adding realm's least recently
// used token (a hit marks its token used once in recencyEvery, on
// average) if the realm holds its fair share (the budget divided by the
// realms holding tokens) or more, else that of the realm holding the most.
// A realm within its fair share so loses no token to another realm's
// callers, however many distinct tokens they present; more distinct
// callers than a realm may hold cost a signature check each for the ones
// forgotten, never a check for everyone.
type verifiedTokens struct {
	budget int
	total  atomic.Int64 // entries in all realms' caches
	// hash is where a token is looked up: maphash under a seed of the
	// process's own (tests make it collide).
	hash   func(token string) uint64
	realms *perRealm[*lru[uint64, verifiedToken]]
}

type verifiedToken struct {
	token  string // the whole token, compared on every lookup
	kid    string
	claims *issuer.Claims
}

// newVerifiedTokens returns empty caches that hold budget entries in all.
func newVerifiedTokens(budget int) *verifiedTokens {
	seed := maphash.MakeSeed()
	hash := func(token string) uint64 { return maphash.String(seed, token[len(token)-min(len(token), hashedTail):]) }
	return &verifiedTokens{budget: budget, hash: hash, realms: newPerRealm(func() (*lru[uint64, verifiedToken], error) {
		// Sized to the whole budget: the shared budget, not the LRU's
		// own size, decides what is forgotten.
		return newLRU[uint64, verifiedToken](budget)
	})}
}

// get returns the claims of token, of realm, verified before with key kid
// for the issuer of realm under base (issuer.IsRealmIssuer).
func (v *verifiedTokens) get(realm, token, kid, base string) (*issuer.Claims, bool) {
	c, ok := v.realms.lookup(realm)
	if !ok {
		return nil, false
	}
	h := v.hash(token)
	e, ok := c.peek(h) // under the LRU's read lock, which callers share
	if !ok || e.token != token || e.kid != kid || !issuer.IsRealmIssuer(e.claims.Issuer, base, realm) {
		return nil, false
	}
	if rand.Uint32()%recencyEvery == 0 {
		c.touch(h) // mark it recently used, under the LRU's exclusive lock
	}
	return e.claims, true
}

// recencyEvery is how many hits, on average, mark their token recently
// used once: marking takes the realm's LRU's exclusive lock, which every
// decision on every core would otherwise take in turn. A token in use is
// marked within a few dozen of its hits, so the LRU still forgets the
// tokens nobody uses first; one it forgets early costs a signature check.
const recencyEvery = 16

// add remembers token, of realm, whose signature checked out with key kid,
// and forgets one other token when that takes the caches over their
// budget. A token that hashes like one remembered already is not
// remembered.
func (v *verifiedTokens) add(realm, token, kid string, claims *issuer.Claims) {
	c, err := v.realms.get(realm)
	if err != nil { // only for a budget below 1: remember nothing
		return
	}
	t := verifiedToken{token: token, kid: kid, claims: claims}
	if had, evicted := c.containsOrAdd(v.hash(token), t); had || evicted {
		return // there already, or one of the realm's own made room
	}
	if v.total.Add(1) <= int64(v.budget) {
		return
	}
	victim := c
	if n := v.realms.len(); c.len()*n < v.budget {
		v.realms.each(func(_ string, o *lru[uint64, verifiedToken]) {
			if o.len() > victim.len() {
				victim = o
			}
		})
	}
	if victim.removeOldest() {
		v.total.Add(-1)
	}
}

// remove forgets token, of realm (it was revoked). The check that refuses
// a revoked token does not depend on it: it only gives the entry back to
// the budget.
func (v *verifiedTokens) remove(realm, token string) {
	c, ok := v.realms.lookup(realm)
	if !ok {
		return
	}
	if c.removeIf(v.hash(token), func(e verifiedToken) bool { return e.token == token }) {
		v.total.Add(-1)
	}
}

// forget drops a realm's cache (its tenant was decommissioned: its tokens
// are refused from then on) and gives its entries back to the budget. A
// token of the realm verified while it is forgotten may stay counted: the
// budget can only err on the small side.
func (v *verifiedTokens) forget(realm string) {
	if c, ok := v.realms.drop(realm); ok {
		v.total.Add(-int64(c.len()))
	}
}
