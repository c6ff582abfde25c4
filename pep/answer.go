package pep

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// pair is one resource-scope pair as the caller asked for it. In
// ListGranted a pair may be a query for many: an empty scope stands for
// every scope of the resource and the resource "*" for every resource.
type pair struct{ resource, scope string }

// wildcard reports whether the pair is a query for many pairs.
func (p pair) wildcard() bool { return p.scope == "" || p.resource == "*" }

// covers reports whether p, a query, asks for the pair other.
func (p pair) covers(other pair) bool {
	return (p.resource == "*" || p.resource == other.resource) && (p.scope == "" || p.scope == other.scope)
}

// answer is what one authorize answer said about the pairs a request asked
// for: every entry the gateway listed for such a pair, counted.
//
// Rule 1 of the contract holds by construction: a decision is made only by
// decide, which reads the entries that name exactly the pair it is given,
// and grants only when there is exactly one of them and it says GRANT. No
// other code turns an answer into a decision, so no pair can inherit,
// borrow or be renamed from another's entry.
type answer struct {
	// entries holds a pair and its listing each. Pairs asked for are there
	// from the start, with no listing; pairs only a wildcard covers join as
	// the gateway lists them. index finds a pair's entry once there are
	// more than scanEntries (a scan of a few is cheaper than hashing, and
	// an answer for a Check has one entry).
	entries []entry
	index   map[pair]int
	// order holds the pairs a wildcard query covers, in the order the
	// gateway first listed them.
	order []pair
}

// entry is one pair of an answer and its listing.
type entry struct {
	p pair
	l listing
}

// scanEntries is the most entries an answer finds by a scan.
const scanEntries = 8

// listing counts the entries for one pair.
type listing struct {
	status Status
	count  int
}

// find returns the position of p's entry.
func (a *answer) find(p pair) (int, bool) {
	if a.index != nil {
		i, ok := a.index[p]
		return i, ok
	}
	for i := range a.entries {
		if a.entries[i].p == p {
			return i, true
		}
	}
	return 0, false
}

// add appends an entry for p, without a listing, and returns its position.
func (a *answer) add(p pair) int {
	i := len(a.entries)
	a.entries = append(a.entries, entry{p: p})
	switch {
	case a.index != nil:
		a.index[p] = i
	case len(a.entries) > scanEntries:
		a.index = make(map[pair]int, 2*len(a.entries))
		for k, e := range a.entries {
			a.index[e.p] = k
		}
	}
	return i
}

// decide returns the decision for exactly the pair p: the status of its one
// entry, or a DENY with a Cause when the answer listed p no times or more
// than once.
func (a *answer) decide(p pair) Decision {
	d := Decision{Resource: p.resource, Scope: p.scope}
	var l listing
	if i, ok := a.find(p); ok {
		l = a.entries[i].l
	}
	switch l.count {
	case 1:
		d.Status = l.status
		if l.status == Error {
			d.Cause = ErrNotEvaluated
		}
	case 0:
		d.Cause = malformed("the answer does not list the pair")
	default:
		d.Cause = malformed("the answer lists the pair %d times", l.count)
	}
	return d
}

// covered returns the decisions for the pairs that the wildcard query q
// covers, in the gateway's order, each made by decide.
func (a *answer) covered(q pair) []Decision {
	var ds []Decision
	for _, p := range a.order {
		if q.covers(p) {
			ds = append(ds, a.decide(p))
		}
	}
	return ds
}

// authorizeMembers and permissionMembers are the members of an authorize
// answer the client reads.
var (
	authorizeMembers  = []string{"status", "permissions"}
	permissionMembers = []string{"resource", "scope", "status"}
)

// maxListed bounds the distinct pairs one answer may make the client keep
// (those asked for and those a wildcard covers): a listing is decoded into
// memory, and no gateway lists that many permissions for one client.
const maxListed = 10_000

// decodeAnswer reads an authorize answer strictly (see newReader, below) and
// records the entries for the pairs of queries; entries for pairs nobody
// asked for are read, checked and dropped, so memory follows the pairs asked
// for, not the size of the body. It returns an error, whose text holds
// nothing the gateway wrote, when the answer is unusable as a whole: it
// does not parse, lacks status or permissions, has an entry without its
// three strings, or names a status other than GRANT, DENY and ERROR.
func decodeAnswer(body []byte, queries []pair) (*answer, error) {
	a := &answer{entries: make([]entry, 0, len(queries))}
	if len(queries) > scanEntries {
		a.index = make(map[pair]int, len(queries))
	}
	var wild []pair
	for _, q := range queries {
		if q.wildcard() {
			wild = append(wild, q)
		} else if _, dup := a.find(q); !dup {
			a.add(q)
		}
	}

	r := newReader(body)
	defer r.free()
	var sawStatus, sawPermissions bool
	err := r.Object()
	for i, ok := r.Next(authorizeMembers, &err); ok; i, ok = r.Next(authorizeMembers, &err) {
		if i == 0 {
			sawStatus = true
			_, err = r.status()
			continue
		}
		sawPermissions = true
		err = r.Array()
		for r.More(&err) {
			var res, scope []byte
			var s Status
			if res, scope, s, err = r.permission(); err == nil {
				err = a.note(res, scope, s, wild)
			}
		}
	}
	switch {
	case err != nil:
		return nil, malformed("the body is not a valid answer: %s", jsonProblem(err))
	case !sawStatus || !sawPermissions:
		return nil, malformed("the answer lacks status or permissions")
	}
	if err := r.End(); err != nil {
		return nil, malformed("%s", jsonProblem(err))
	}
	return a, nil
}

// note counts one entry, named by its resource and scope as bytes of the
// answer: the entry of a pair asked for is matched without copying them
// (the pair keeps the query's strings); a pair only a wildcard covers is
// copied and added; any other is dropped.
func (a *answer) note(res, scope []byte, s Status, wild []pair) error {
	view := pair{resource: unsafeString(res), scope: unsafeString(scope)}
	if view.wildcard() {
		return nil // an entry no pair can match
	}
	i, ok := a.find(view)
	if !ok {
		covered := false
		for _, q := range wild {
			if q.covers(view) {
				covered = true
				break
			}
		}
		if !covered {
			return nil
		}
		if len(a.entries) == maxListed {
			return errTooManyPairs
		}
		p := pair{resource: string(res), scope: string(scope)}
		i = a.add(p)
		a.order = append(a.order, p)
	} else if a.entries[i].l.count == 0 && len(wild) > 0 {
		for _, q := range wild { // asked for, and covered too
			if q.covers(view) {
				a.order = append(a.order, a.entries[i].p)
				break
			}
		}
	}
	a.entries[i].l = listing{status: s, count: a.entries[i].l.count + 1}
	return nil
}

// unsafeString views b as a string without copying, for map lookups only:
// the string must not be kept, since b's bytes are the answer's or the
// reader's scratch space.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// permission reads one entry of permissions, which must carry the three
// strings resource, scope and status.
func (r *reader) permission() (res, scope []byte, s Status, err error) {
	var seen [3]bool
	err = r.Object()
	for i, ok := r.Next(permissionMembers, &err); ok; i, ok = r.Next(permissionMembers, &err) {
		seen[i] = true // Next refuses a second one
		switch i {
		case 0:
			res, err = r.Bytes(&r.resScratch)
		case 1:
			scope, err = r.Bytes(&r.scopeScratch)
		default:
			s, err = r.status()
		}
	}
	if err == nil && seen != [3]bool{true, true, true} {
		err = strictjson.ErrMissingMember
	}
	return res, scope, s, err
}

// status reads one of the three status strings.
func (r *reader) status() (Status, error) {
	b, err := r.Bytes(&r.statusScratch)
	if err != nil {
		return Deny, err
	}
	switch string(b) { // no copy: the conversion is only compared
	case "GRANT":
		return Grant, nil
	case "DENY":
		return Deny, nil
	case "ERROR":
		return Error, nil
	}
	return Deny, errUnknownStatus
}

// The gateway's answers are read strictly by a strictjson.Reader (see that
// package for the rules); pep's reader adds the scratch space and the
// budget its answers need.

// reader reads one JSON answer.
type reader struct {
	*strictjson.Reader
	// scratch space for unescaping a permission's resource and scope, which
	// must both stay valid until the permission is read, and a status
	resScratch, scopeScratch, statusScratch []byte
	// budget is how many more items (tenants, departments) the answer
	// may make the client keep; see spend.
	budget int
}

// spend counts one more item kept against the budget.
func (r *reader) spend() error {
	if r.budget--; r.budget < 0 {
		return errTooManyTenants
	}
	return nil
}

// readers keeps readers between answers, with their name sets and stacks.
var readers = sync.Pool{New: func() any { return &reader{Reader: strictjson.New()} }}

// newReader returns a reader of body; release it with free when done.
func newReader(body []byte) *reader {
	r := readers.Get().(*reader)
	r.Reset(body)
	r.budget = 0
	return r
}

// free returns r to the pool; it must not be used again.
func (r *reader) free() {
	r.Release()
	readers.Put(r)
}

// pep's own reading errors, with fixed texts.
var (
	errUnknownStatus  = errors.New("a status is not GRANT, DENY or ERROR")
	errTooManyPairs   = fmt.Errorf("the answer lists more than %d pairs", maxListed)
	errTooManyTenants = fmt.Errorf("the answer lists more than %d tenants and departments", maxOrganizationItems)
)

// jsonProblem describes why an answer could not be read, in words that hold
// nothing of the answer itself.
func jsonProblem(err error) string {
	return strictjson.Problem(err, errUnknownStatus, errTooManyPairs, errTooManyTenants)
}
