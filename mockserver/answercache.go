package mockserver

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// Bounds of the answer cache: how many answers it holds (a power of
// two), and the largest body and answer it keeps (a few kB an entry at
// most, under 10 MB in all).
const (
	maxCachedAnswers    = 1 << 10
	maxCachedBody       = 2 << 10
	maxCachedAnswerSize = 4 << 10
)

// answerCache remembers /authorize's answers: an authenticated caller's
// (realm, subject, organization claim) and the request body's bytes, with
// the realm's generation (store.Realm.Generation) the answer was computed
// under. A decision is a function of exactly these: the body names the
// client, the pairs and the method, the subject and the organization claim
// are the token's, and everything the evaluation reads (the client's
// policy, the subject's roles and groups) is the realm's, which no write
// leaves at the same generation. So an answer of the current generation
// is the answer the evaluation would give, and an answer of an older one
// is never given: it is evaluated again from the request it keeps parsed.
//
// A hit costs a hash and a compare of the body, and spares the body's
// reading, the evaluation and the answer's writing. It is filled only
// after authentication (nothing an unauthenticated request sends is
// stored), only with 200 answers, and is not used when a denial log is
// set (each denial is logged with its explanation).
//
// It is direct-mapped: each (caller, body) has one slot, chosen by a hash
// under a seed of the process's own, and an answer put in a slot replaces
// the one there. So it holds at most maxCachedAnswers answers, a lookup
// takes no lock and allocates nothing, and an entry found in the slot is
// compared whole (realm, subject, organization claim, body): another
// request's answer is never given. The zero answerCache is not ready: use
// newAnswerCache. It is safe for concurrent use.
type answerCache struct {
	seed  maphash.Seed
	slots [maxCachedAnswers]atomic.Pointer[cachedAnswer]
}

func newAnswerCache() *answerCache { return &answerCache{seed: maphash.MakeSeed()} }

// cachedAnswer is an answer and the request it answers, parsed; it is
// never changed once stored.
type cachedAnswer struct {
	rm        *store.Realm
	user, org string
	body      string // the request body, whole
	gen       uint64 // the realm's generation the answer was computed under
	clientID  string
	resources []decision.Resource
	method    string
	answer    []byte // what writeDecision writes
}

// slot is the slot of body asked by c.
func (ac *answerCache) slot(c *caller, body []byte) *atomic.Pointer[cachedAnswer] {
	h := maphash.Bytes(ac.seed, body)
	h = h*31 + maphash.String(ac.seed, c.subject)
	h = h*31 + maphash.String(ac.seed, c.org)
	return &ac.slots[h&(maxCachedAnswers-1)]
}

// lookup returns the entry of body asked by c in slot, nil when there is
// none. The entry may be of an older generation of the realm: compare its
// gen inside the realm's Read.
func (ac *answerCache) lookup(slot *atomic.Pointer[cachedAnswer], c *caller, body []byte) *cachedAnswer {
	e := slot.Load()
	if e == nil || e.rm != c.rm || e.user != c.subject || e.org != c.org || e.body != string(body) {
		return nil
	}
	return e
}

// store puts e in slot, in place of what the slot held, unless its body or
// answer is too large to keep.
func (ac *answerCache) store(slot *atomic.Pointer[cachedAnswer], e *cachedAnswer) {
	if len(e.body) > maxCachedBody || len(e.answer) > maxCachedAnswerSize {
		return
	}
	slot.Store(e)
}
