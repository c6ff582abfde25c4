package mockserver

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// revokedTokens remembers the access tokens revoked at the revocation
// endpoint (revoke.go), per realm by jti, until each one's exp: every token
// check (verifyToken) refuses them, on every route, whether the
// verified-token cache holds them or not.
//
// Only a token whose signature verified, that had not expired and that was
// issued to the client that authenticated the request is ever recorded
// (nothing an unauthenticated request sends is stored), and an entry goes
// once its token has expired, so the entries are at most the tokens the
// server issued that are still live: each revocation first forgets the
// realm's expired ones. A token past its exp is refused by its exp, so
// forgetting it changes no answer, however far the clock has jumped (a
// process frozen for an hour finds the tokens it holds expired, and
// refused for that).
//
// That holds only while the clock never steps back: after a step back (NTP
// correcting a clock that ran ahead) a forgotten token's exp can be in the
// future again. So each realm keeps a watermark, as the DPoP replay cache
// does (dpop/replay.go): the latest exp of the entries it forgot. A token
// expiring no later than that is refused as revoked, whatever the clock
// says: a revocation, once recorded, refuses its token until it is expired
// by every clock reading since. A reading wrong ahead, corrected, costs the
// realm's fresh tokens only while they expire no later than the revoked
// ones that reading forgot (fresh tokens of the same lifetime as those it
// revoked before the wrong reading expire later, and pass at once), not
// the whole time the clock was wrong; latching the latest reading instead
// would refuse every token for that long. Token expiry itself stays judged
// by the current reading, as nbf is.
type revokedTokens struct {
	total  atomic.Int64 // entries in every realm: 0 lets a check skip the rest
	forgot atomic.Bool  // some realm forgot an entry: its watermark must be read
	realms *perRealm[*realmRevocations]
}

// realmRevocations are one realm's revoked tokens.
type realmRevocations struct {
	mu    sync.RWMutex         // written by revoke, read by every token check
	byJTI map[string]time.Time // jti -> exp
	order expiries             // the same entries, soonest exp first
	// forgot is the latest exp of an entry forgotten as expired (zero:
	// none): every token expiring no later is refused.
	forgot time.Time
}

func newRevokedTokens() *revokedTokens {
	return &revokedTokens{realms: newPerRealm(func() (*realmRevocations, error) {
		return &realmRevocations{byJTI: map[string]time.Time{}}, nil
	})}
}

// revoke records that the token of realm with jti, valid until exp, is
// revoked, after forgetting the realm's tokens that expired by now.
func (v *revokedTokens) revoke(realm, jti string, exp, now time.Time) {
	rr, err := v.realms.get(realm)
	if err != nil {
		return // newValue never fails
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for len(rr.order) > 0 && !now.Before(rr.order[0].exp) {
		e := heap.Pop(&rr.order).(expiry)
		delete(rr.byJTI, e.jti)
		v.total.Add(-1)
		if e.exp.After(rr.forgot) {
			rr.forgot = e.exp
		}
		v.forgot.Store(true)
	}
	if _, ok := rr.byJTI[jti]; ok || !now.Before(exp) {
		return
	}
	rr.byJTI[jti] = exp
	heap.Push(&rr.order, expiry{jti: jti, exp: exp})
	v.total.Add(1)
}

// revoked reports whether the token of realm with jti, valid until exp,
// was revoked, or may have been: it expires no later than a revoked token
// the realm forgot (the clock may have stepped back since). While no token
// is revoked and none was forgotten, it costs two atomic loads.
func (v *revokedTokens) revoked(realm, jti string, exp time.Time) bool {
	if v.total.Load() == 0 && !v.forgot.Load() {
		return false
	}
	rr, ok := v.realms.lookup(realm)
	if !ok {
		return false
	}
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	_, ok = rr.byJTI[jti]
	return ok || !rr.forgot.IsZero() && !exp.After(rr.forgot)
}

// forget drops a realm's revocations (its tenant was decommissioned: all
// its tokens are refused from then on). A revocation recorded while it is
// forgotten may stay counted in total: that only costs checks their fast
// path.
func (v *revokedTokens) forget(realm string) {
	if rr, ok := v.realms.drop(realm); ok {
		rr.mu.Lock()
		v.total.Add(-int64(len(rr.byJTI)))
		rr.mu.Unlock()
	}
}

// expiry is one revoked token in a realm's heap.
type expiry struct {
	jti string
	exp time.Time
}

// expiries is a min-heap of revoked tokens by exp (container/heap).
type expiries []expiry

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].exp.Before(h[j].exp) }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
