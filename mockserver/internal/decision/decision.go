// Package decision is the reference server's authorization decision
// engine. It knows nothing of HTTP: the server hands it a client of the
// store, the subject's live state and the requested pairs.
//
// A client's resources and permissions are compiled once into a Policy
// (resource -> scope -> applicable permissions); a request then costs one
// map lookup per pair plus the subject's role set, computed from the live
// store so that a removed assignment counts on the very next decision.
package decision

import (
	"strings"
	"sync"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// Status is the outcome of one resource-scope pair, or of a whole request.
type Status string

// Statuses. The zero Status is none of them and never grants.
const (
	Grant Status = "GRANT"
	Deny  Status = "DENY"
	Error Status = "ERROR"
)

// Resource is one requested resource; no Scopes means every scope defined on
// it, and the name "*" means every resource of the client.
type Resource struct {
	Name   string
	Scopes []string
}

// Wildcard is the resource name that asks for every resource of the client.
const Wildcard = "*"

// Permission is the status of one pair.
type Permission struct {
	Resource string
	Scope    string
	Status   Status
}

// Result is the answer to a request: the overall status and one Permission
// per distinct pair, in request order.
type Result struct {
	Status      Status
	Permissions []Permission
}

// Policy is a client's permissions indexed for evaluation. It is immutable
// and safe for concurrent use.
type Policy struct {
	resources []compiledResource // in the client's order
	byName    map[string]int
	// scoped holds every scope some resource defines: a "*" item's
	// listed scope outside it expands to no resource's pair.
	scoped map[string]struct{}
}

// wildcard stands for "*" in the pair a "*" item yields when it expands
// to no resource's pair: it defines no scope, so that pair is an ERROR
// whose reason is the undefined scope. It is never written.
var wildcard = &compiledResource{name: Wildcard}

type compiledResource struct {
	name    string
	scopes  []string              // in the client's order
	byScope map[string][]*permRef // scope -> permissions applying to (resource, scope)
}

// permRef is a permission ready to test against a subject.
type permRef struct {
	name                 string
	roles, groups, users []string
	methods              []string // upper case; empty: any method
	// owner, when set, names the resource property that must hold the
	// subject's username or email (ownership of one resource instance).
	owner string
}

// Compile indexes c's resources and permissions. A permission naming a
// resource or scope the client does not define applies to nothing.
func Compile(c *store.Client) *Policy {
	p := &Policy{byName: make(map[string]int, len(c.Resources)), scoped: map[string]struct{}{}}
	for _, r := range c.Resources {
		if _, dup := p.byName[r.Name]; dup {
			continue
		}
		cr := compiledResource{name: r.Name, byScope: make(map[string][]*permRef, len(r.Scopes))}
		for _, s := range r.Scopes {
			if _, dup := cr.byScope[s]; !dup {
				cr.scopes = append(cr.scopes, s)
				cr.byScope[s] = nil
				p.scoped[s] = struct{}{}
			}
		}
		p.byName[r.Name] = len(p.resources)
		p.resources = append(p.resources, cr)
	}
	for i := range c.Permissions {
		cp := &c.Permissions[i]
		idx, ok := p.byName[cp.Resource]
		if !ok {
			continue
		}
		ref := &permRef{name: cp.Name, roles: cp.Roles, groups: cp.Groups, users: cp.Users, owner: cp.OwnerProperty}
		for _, m := range cp.Methods {
			ref.methods = append(ref.methods, strings.ToUpper(m))
		}
		cr := &p.resources[idx]
		scopes := cp.Scopes
		if len(scopes) == 0 {
			scopes = cr.scopes
		}
		for _, s := range scopes {
			if list, ok := cr.byScope[s]; ok && !containsRef(list, ref) {
				cr.byScope[s] = append(list, ref)
			}
		}
	}
	return p
}

func containsRef(list []*permRef, r *permRef) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}

// Cache holds compiled policies by client. Clients of the store are never
// changed in place (a change replaces the *store.Client), so a pointer is a
// sound key. The zero Cache is ready to use and safe for concurrent use.
type Cache struct {
	m sync.Map // *store.Client -> *Policy
}

// Policy returns c's compiled policy, compiling it on first use.
func (k *Cache) Policy(c *store.Client) *Policy {
	if p, ok := k.m.Load(c); ok {
		return p.(*Policy)
	}
	p, _ := k.m.LoadOrStore(c, Compile(c))
	return p.(*Policy)
}

// Subject is who a decision is about: a user's id, groups and effective
// realm role ids, and the names an ownership condition compares.
type Subject struct {
	UserID string
	Groups store.Set
	Roles  store.Set
	// Username and Email are the user's; empty for an unknown user.
	Username, Email string
}

// SubjectOf computes the subject's effective roles from the live realm: the
// user's direct roles, the roles of the user's groups, and for each of the
// user's assignments the roles linked to its organization plus the template
// roles of its department. A non-empty org (an organization id or alias,
// the token's organization claim) counts only assignments in that
// organization; an org that names no organization counts none. An unknown
// user has no roles and no groups.
//
// It is small enough to be inlined, so that a caller whose Subject does not
// escape (a decision) holds the role set on its stack, not on the heap.
func SubjectOf(r *store.Realm, userID, org string) Subject {
	sub := Subject{UserID: userID, Roles: make(store.Set, 8)}
	sub.load(r, org, nil)
	return sub
}

// load fills in the groups, names and roles of sub.UserID. When f is not
// nil it also records there what it found and how the user holds each
// role (an explanation); the roles it adds are the same either way.
func (sub *Subject) load(r *store.Realm, org string, f *SubjectFacts) {
	u, ok := r.Users[sub.UserID]
	if !ok {
		return
	}
	sub.Groups = u.GroupIDs
	sub.Username, sub.Email = u.Username, u.Email
	var trace store.RoleTracer
	if f != nil {
		trace = f.known(r, u)
	}
	r.TraceEffectiveRoles(u, sub.Roles, trace)
	orgID, known := r.ClaimedOrganization(org)
	if !known {
		if f != nil {
			f.OrganizationUnknown = true
		}
		return
	}
	if f != nil {
		f.OrganizationID = orgID
	}
	r.TraceOrgRoles(sub.UserID, orgID, sub.Roles, trace)
}

// grants reports whether the permission grants to sub for the request
// method and the resource instance's properties (nil: none known).
//
// With a non-nil pc it records there every condition it tests and its
// outcome, and tests them all rather than stopping at the first that
// settles the answer; the answer is the same. This is the only test of a
// permission: an explanation is what it recorded, not a second opinion.
// It records only the permission's own data and outcomes, never the
// method, the properties or anything of sub: a decision's evaluation holds
// them, and recording them would move the subject of every decision, not
// only of an explained one, to the heap (Explain adds them).
func (p *permRef) grants(sub *Subject, method string, props map[string]any, pc *PermissionCheck) bool {
	ok := true
	if len(p.methods) > 0 {
		m := containsFold(p.methods, method)
		if pc != nil {
			pc.Method = &MethodCheck{Allowed: append([]string(nil), p.methods...), Matched: m}
		}
		if !m {
			if pc == nil {
				return false
			}
			ok = false
		}
	}
	if p.owner != "" {
		o := owns(sub, props[p.owner])
		if pc != nil {
			pc.Owner = &OwnerCheck{Property: p.owner, Matched: o}
		}
		if !o {
			if pc == nil {
				return false
			}
			ok = false
		}
	}
	named := false
	for _, id := range p.roles {
		_, held := sub.Roles[id]
		if pc != nil {
			pc.Roles = append(pc.Roles, FactCheck{ID: id, Matched: held})
		}
		if held {
			if pc == nil {
				return true
			}
			named = true
		}
	}
	for _, id := range p.groups {
		_, in := sub.Groups[id]
		if pc != nil {
			pc.Groups = append(pc.Groups, FactCheck{ID: id, Matched: in})
		}
		if in {
			if pc == nil {
				return true
			}
			named = true
		}
	}
	for _, id := range p.users {
		is := id == sub.UserID
		if pc != nil {
			pc.Users = append(pc.Users, FactCheck{ID: id, Matched: is})
		}
		if is {
			if pc == nil {
				return true
			}
			named = true
		}
	}
	if pc != nil {
		pc.Matched = ok && named
	}
	return ok && named
}

// owns reports whether v, a resource property, names sub: it is a string
// equal to sub's username or email. Nothing else is ownership: a missing
// property, another type, an empty name.
func owns(sub *Subject, v any) bool {
	s, ok := v.(string)
	return ok && s != "" && (s == sub.Username || s == sub.Email)
}

func containsFold(list []string, s string) bool {
	if s == "" {
		return false
	}
	for _, v := range list {
		if ascii.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// Evaluate decides every pair the request names, in request order with
// duplicates removed. A pair is GRANT when an applicable permission grants
// to sub (and lists method, when it lists methods), DENY when none does, and
// ERROR when the resource or scope is not defined on the client. A "*"
// resource expands to every resource of the client, limited to its listed
// scopes when it lists some (each resource then contributes the listed
// scopes it defines). The overall status is DENY if any pair is DENY, else
// ERROR if any is ERROR, else GRANT.
//
// Every request item yields at least one pair, so that no item can vanish
// from the answer and leave it to the others (nothing decided grants
// nothing): an item that would expand to no pair of the client's yields
// ERROR pairs of what it asked for that the client does not define. An
// undefined resource asked with no scopes is the pair (name, ""); a
// defined resource that defines no scopes, asked with none, is the pair
// (name, ""); a "*" item yields ("*", scope) for each listed scope that no
// resource defines, and ("*", "") when it lists none and the client defines
// no scope at all.
func (p *Policy) Evaluate(sub *Subject, resources []Resource, method string) Result {
	return p.evaluate(sub, resources, method, nil)
}

// evaluate is Evaluate, recording each pair and its reasons in tr when tr
// is not nil.
func (p *Policy) evaluate(sub *Subject, resources []Resource, method string, tr *tracer) Result {
	n := 0
	for _, r := range resources {
		n += max(len(r.Scopes), 1)
	}
	// The pairs are kept beside the evaluation, not in it: a slice stored
	// through the evaluation would make everything it points to, the
	// subject included, escape to the heap.
	e := evaluation{p: p, sub: sub, method: method}
	out := make([]Permission, 0, n)
	for _, r := range resources {
		if r.Name == Wildcard {
			out = e.addWildcard(out, r.Scopes, tr)
			continue
		}
		var cr *compiledResource // nil: the client does not define it
		if idx, ok := p.byName[r.Name]; ok {
			cr = &p.resources[idx]
		}
		scopes := r.Scopes
		if len(scopes) == 0 && cr != nil {
			scopes = cr.scopes
		}
		if len(scopes) == 0 {
			out = e.add(out, cr, r.Name, "", tr)
			continue
		}
		for _, s := range scopes {
			out = e.add(out, cr, r.Name, s, tr)
		}
	}
	return Result{Status: Overall(out), Permissions: out}
}

// addWildcard appends the pairs of a "*" item listing scopes (none: every
// scope): each resource's pairs in the client's order, then the pair
// ("*", s), an ERROR, of each listed scope s that no resource defines, or
// ("*", "") when the item lists none and the client defines no scope.
func (e *evaluation) addWildcard(out []Permission, scopes []string, tr *tracer) []Permission {
	p := e.p
	for i := range p.resources {
		cr := &p.resources[i]
		if len(scopes) == 0 {
			for _, s := range cr.scopes {
				out = e.add(out, cr, cr.name, s, tr)
			}
			continue
		}
		for _, s := range scopes {
			if _, ok := cr.byScope[s]; ok {
				out = e.add(out, cr, cr.name, s, tr)
			}
		}
	}
	if len(scopes) == 0 && len(p.scoped) == 0 {
		return e.add(out, wildcard, Wildcard, "", tr)
	}
	for _, s := range scopes {
		if _, ok := p.scoped[s]; !ok {
			out = e.add(out, wildcard, Wildcard, s, tr)
		}
	}
	return out
}

// Decide is the status of the one pair (resource, scope) for sub, as
// Evaluate decides it, for a request whose method is method and whose
// resource instance has the properties props (an AuthZEN resource's
// properties; nil when the request names no instance, which no permission
// with an ownership condition grants to). "*" is no resource here: ERROR.
func (p *Policy) Decide(sub *Subject, resource, scope, method string, props map[string]any) Status {
	return p.decidePair(sub, resource, scope, method, props, nil)
}

// decidePair is Decide, recording the pair and its reasons in tr when tr
// is not nil.
func (p *Policy) decidePair(sub *Subject, resource, scope, method string, props map[string]any, tr *tracer) Status {
	e := evaluation{p: p, sub: sub, method: method, props: props}
	var cr *compiledResource
	if idx, ok := p.byName[resource]; ok && resource != Wildcard {
		cr = &p.resources[idx]
	}
	tr = tr.next()
	st := e.decide(cr, scope, tr)
	if tr != nil {
		tr.pair(resource, scope, st)
	}
	return st
}

// evaluation is the state of one request's pairs: who they are for, and
// the set of pairs seen once there are too many to scan. The tracer of an
// explanation is passed beside it, never kept in it: escape analysis does
// not tell an evaluation's fields apart, so a tracer in it, whose records
// go to the heap, would send the subject there on every decision.
type evaluation struct {
	p      *Policy
	sub    *Subject
	method string
	props  map[string]any         // the resource instance's properties; nil: none
	seen   map[[2]string]struct{} // used once out is too long to scan
}

// dedupeScan is the number of pairs below which duplicates are found by a
// linear scan rather than a map.
const dedupeScan = 16

// add appends the pair (resource, scope) to out, decided, unless out holds
// it already, recording it in tr when tr is not nil.
func (e *evaluation) add(out []Permission, cr *compiledResource, resource, scope string, tr *tracer) []Permission {
	key := [2]string{resource, scope}
	if len(out) < dedupeScan {
		for _, q := range out {
			if q.Resource == resource && q.Scope == scope {
				return out
			}
		}
	} else {
		if e.seen == nil {
			e.seen = make(map[[2]string]struct{}, 2*len(out))
			for _, q := range out {
				e.seen[[2]string{q.Resource, q.Scope}] = struct{}{}
			}
		}
		if _, dup := e.seen[key]; dup {
			return out
		}
		e.seen[key] = struct{}{}
	}
	tr = tr.next()
	st := e.decide(cr, scope, tr)
	if tr != nil {
		tr.pair(resource, scope, st)
	}
	return append(out, Permission{Resource: resource, Scope: scope, Status: st})
}

// decide is the status of the pair (cr, scope); cr is nil for a resource
// the client does not define. When explaining (tr is not nil), it tests every permission
// that applies, recording each, instead of stopping at the first grant.
func (e *evaluation) decide(cr *compiledResource, scope string, tr *tracer) Status {
	if cr == nil {
		if tr != nil {
			tr.undefined = undefinedResource
		}
		return Error
	}
	perms, ok := cr.byScope[scope]
	if !ok {
		if tr != nil {
			tr.undefined = undefinedScope
		}
		return Error
	}
	st := Deny
	for _, p := range perms {
		var pc *PermissionCheck
		if tr != nil {
			pc = tr.check(p.name)
		}
		if p.grants(e.sub, e.method, e.props, pc) {
			if pc == nil {
				return Grant
			}
			st = Grant
		}
	}
	return st
}

// Overall derives a request's status from its pairs: DENY if any is DENY,
// otherwise ERROR if any is ERROR, otherwise GRANT. No pairs (which
// Evaluate never returns), or a status that is none of the three, is DENY:
// nothing grants by default.
func Overall(perms []Permission) Status {
	if len(perms) == 0 {
		return Deny
	}
	st := Grant
	for _, p := range perms {
		switch p.Status {
		case Grant:
		case Error:
			st = Error
		default:
			return Deny
		}
	}
	return st
}

// Resources returns the names of the client's resources, in the client's
// order. The slice is new; the policy is not changed through it.
func (p *Policy) Resources() []string {
	out := make([]string, len(p.resources))
	for i := range p.resources {
		out[i] = p.resources[i].name
	}
	return out
}

// Scopes returns the scopes resource defines, in the client's order, and
// whether the client defines resource at all.
func (p *Policy) Scopes(resource string) ([]string, bool) {
	idx, ok := p.byName[resource]
	if !ok || resource == Wildcard {
		return nil, false
	}
	return append([]string(nil), p.resources[idx].scopes...), true
}
