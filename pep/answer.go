package pep

// pair is one resource-scope pair as the caller asked for it. In
// ListGranted a pair may be a query for many: an empty scope stands for
// every scope of the resource and the resource "*" for every resource.
type pair struct{ resource, scope string }

// wildcard reports whether the pair is a query for many pairs.
func (p pair) wildcard() bool { return p.scope == "" || p.resource == "*" }

// covers reports whether the query q asks for the pair p.
func (q pair) covers(p pair) bool {
	return (q.resource == "*" || q.resource == p.resource) && (q.scope == "" || q.scope == p.scope)
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
	listed map[pair]listing
	// order holds the pairs a wildcard query covers, in the order the
	// gateway first listed them.
	order []pair
}

// listing counts the entries for one pair.
type listing struct {
	status Status
	count  int
}

// decide returns the decision for exactly the pair p: the status of its one
// entry, or a DENY with a Cause when the answer listed p no times or more
// than once.
func (a *answer) decide(p pair) Decision {
	d := Decision{Resource: p.resource, Scope: p.scope}
	switch l := a.listed[p]; l.count {
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

// decodeAnswer reads an authorize answer strictly (see strictjson.go) and
// records the entries for the pairs of queries; entries for pairs nobody
// asked for are read, checked and dropped, so memory follows the pairs asked
// for, not the size of the body. It returns an error, whose text holds
// nothing the gateway wrote, when the answer is unusable as a whole: it
// does not parse, lacks status or permissions, has an entry without its
// three strings, or names a status other than GRANT, DENY and ERROR.
func decodeAnswer(body []byte, queries []pair) (*answer, error) {
	a := &answer{listed: make(map[pair]listing, len(queries))}
	var exact map[pair]bool
	var wild []pair
	for _, q := range queries {
		if q.wildcard() {
			wild = append(wild, q)
			continue
		}
		if exact == nil {
			exact = make(map[pair]bool, len(queries))
		}
		exact[q] = true
	}
	wanted := func(p pair) (asked, covered bool) {
		for _, q := range wild {
			if q.covers(p) {
				covered = true
				break
			}
		}
		return exact[p] || covered, covered
	}

	r := newReader(body)
	defer r.free()
	var sawStatus, sawPermissions bool
	err := r.object(authorizeMembers, func(i int) error {
		if i == 0 {
			sawStatus = true
			_, err := r.status()
			return err
		}
		sawPermissions = true
		return r.array(func() error {
			p, s, err := r.permission()
			if err != nil {
				return err
			}
			if p.wildcard() {
				return nil // an entry no pair can match
			}
			keep, covered := wanted(p)
			if !keep {
				return nil
			}
			l := a.listed[p]
			if l.count == 0 {
				if len(a.listed) == maxListed {
					return errTooManyPairs
				}
				if covered {
					a.order = append(a.order, p)
				}
			}
			a.listed[p] = listing{status: s, count: l.count + 1}
			return nil
		})
	})
	switch {
	case err != nil:
		return nil, malformed("the body is not a valid answer: %s", jsonProblem(err))
	case !sawStatus || !sawPermissions:
		return nil, malformed("the answer lacks status or permissions")
	}
	if err := r.end(); err != nil {
		return nil, malformed("%s", jsonProblem(err))
	}
	return a, nil
}

// permission reads one entry of permissions, which must carry the three
// strings resource, scope and status.
func (r *reader) permission() (pair, Status, error) {
	var p pair
	var s Status
	var seen [3]bool
	err := r.object(permissionMembers, func(i int) error {
		seen[i] = true // object refuses a second one
		var err error
		switch i {
		case 0:
			p.resource, err = r.str()
		case 1:
			p.scope, err = r.str()
		default:
			s, err = r.status()
		}
		return err
	})
	if err == nil && seen != [3]bool{true, true, true} {
		err = errMissingMember
	}
	return p, s, err
}

// status reads one of the three status strings.
func (r *reader) status() (Status, error) {
	v, err := r.str()
	if err != nil {
		return Deny, err
	}
	s, ok := parseStatus(v)
	if !ok {
		return Deny, errUnknownStatus
	}
	return s, nil
}
