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
// future again. So a realm keeps remembering what it forgot: the last
// recall forgotten revocations by jti, refused exactly, whatever the
// clock says; and, past those, a watermark, as the DPoP replay cache does
// (dpop/replay.go): the latest exp of a revocation pushed out of the
// recall. A token expiring no later than the watermark is refused as
// revoked. Exact recall first keeps a wrong reading from costing other
// tokens: a token issued and revoked while the clock ran a day ahead
// carries that day in its exp, and were it the watermark at once, the
// correction would refuse every token of the realm expiring within the
// day. Only a realm that forgets more than recall revocations after such
// a reading pays that, for the tokens expiring before the ones pushed out.
// Token expiry itself stays judged by the current reading, as nbf is.
type revokedTokens struct {
	total  atomic.Int64 // entries in every realm: 0 lets a check skip the rest
	forgot atomic.Bool  // some realm forgot an entry: its recall and watermark must be read
	realms *perRealm[*realmRevocations]
}

// recall is how many forgotten revocations a realm refuses by jti before
// the watermark stands for the oldest of them (a few hundred KiB at most).
const recall = 4096

// realmRevocations are one realm's revoked tokens.
type realmRevocations struct {
	mu    sync.RWMutex         // written by revoke, read by every token check
	byJTI map[string]time.Time // jti -> exp
	order expiries             // the same entries, soonest exp first
	// recalled are the last revocations forgotten as expired, by jti, in
	// the order forgotten (recalledOrder): at most recall of them.
	recalled      map[string]struct{}
	recalledOrder []expiry
	// forgot is the latest exp of a revocation pushed out of recalled
	// (zero: none): every token expiring no later is refused.
	forgot time.Time
}

func newRevokedTokens() *revokedTokens {
	return &revokedTokens{realms: newPerRealm(func() (*realmRevocations, error) {
		return &realmRevocations{byJTI: map[string]time.Time{}, recalled: map[string]struct{}{}}, nil
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
		rr.remember(e)
		v.forgot.Store(true)
	}
	if _, ok := rr.byJTI[jti]; ok || !now.Before(exp) {
		return
	}
	rr.byJTI[jti] = exp
	heap.Push(&rr.order, expiry{jti: jti, exp: exp})
	v.total.Add(1)
}

// remember keeps a forgotten revocation in the recall, pushing the oldest
// one out into the watermark when the recall is full.
func (rr *realmRevocations) remember(e expiry) {
	rr.recalled[e.jti] = struct{}{}
	rr.recalledOrder = append(rr.recalledOrder, e)
	if len(rr.recalledOrder) <= recall {
		return
	}
	old := rr.recalledOrder[0]
	rr.recalledOrder = rr.recalledOrder[1:]
	delete(rr.recalled, old.jti)
	if old.exp.After(rr.forgot) {
		rr.forgot = old.exp
	}
}

// revoked reports whether the token of realm with jti, valid until exp,
// was revoked, or may have been: it was forgotten and is still recalled,
// or it expires no later than a revocation pushed out of the recall (the
// clock may have stepped back since). While no token is revoked and none
// was forgotten, it costs two atomic loads.
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
	if _, ok := rr.byJTI[jti]; ok {
		return true
	}
	if _, ok := rr.recalled[jti]; ok {
		return true
	}
	return !rr.forgot.IsZero() && !exp.After(rr.forgot)
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
