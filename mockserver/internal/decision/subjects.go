package decision

import (
	"sync"
	"sync/atomic"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// maxSubjects is how many subjects a SubjectCache holds before it starts
// over.
const maxSubjects = 1 << 14

// SubjectCache remembers the subjects SubjectOf computed, each with the
// generation of the realm it was computed under (store.Realm.Generation),
// so that a subject's next decision skips the walk of its groups and
// assignments while nothing in the realm has changed. Any write of the
// realm changes its generation, and a subject of an older one is computed
// again: a removed assignment still counts on the very next decision.
//
// A cached Subject refers to the realm's data (its groups): use it only
// inside the Read of the realm it was asked for, as SubjectOf's. The zero
// SubjectCache is ready to use and safe for concurrent use; it holds at
// most maxSubjects subjects (a few hundred bytes each), forgetting them
// all when it is full.
type SubjectCache struct {
	m sync.Map // subjectKey -> *cachedSubject
	n atomic.Int64
}

type subjectKey struct {
	realm     *store.Realm
	user, org string
}

type cachedSubject struct {
	gen uint64
	sub Subject
}

// Of returns SubjectOf(r, userID, org), from the cache when r has not
// changed since it was computed. Call it inside the Read of r; the Subject
// is shared and read-only.
func (c *SubjectCache) Of(r *store.Realm, userID, org string) *Subject {
	k := subjectKey{realm: r, user: userID, org: org}
	gen := r.Generation()
	if v, ok := c.m.Load(k); ok {
		if e := v.(*cachedSubject); e.gen == gen {
			return &e.sub
		}
	}
	e := &cachedSubject{gen: gen, sub: Subject{UserID: userID, Roles: make(store.Set, 8)}}
	e.sub.load(r, org, nil)
	if _, replaced := c.m.Swap(k, e); !replaced && c.n.Add(1) > maxSubjects {
		c.m.Clear()
		c.n.Store(0)
	}
	return &e.sub
}
