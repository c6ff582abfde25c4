package decision

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// This file is the explanation of a decision: what the deciding code saw,
// recorded by that code as it decided (Subject.load, permRef.grants,
// evaluation.decide with a tracer), then given names from the realm. A
// decision that is not explained records nothing and costs nothing more
// than a nil test per condition.

// SourceKind names how a subject holds a role.
type SourceKind string

// The ways a subject holds a role (docs/reference-server.md, "Why was it
// denied?": the effective roles and their sources).
const (
	// FromRealmRole is a realm role assigned to the user directly.
	FromRealmRole SourceKind = "realm-role"
	// FromGroup is a role of a group the user is a member of.
	FromGroup SourceKind = "group"
	// FromOrganization is a role linked to an organization, held through
	// the user's assignment to one of its departments.
	FromOrganization SourceKind = "organization"
	// FromTemplate is a template role of a department the user is
	// assigned to.
	FromTemplate SourceKind = "template"
)

// RoleSource is one way a subject holds a role. Group names the group of a
// FromGroup source; Organization and Department name the assignment of a
// FromOrganization or FromTemplate source. Names are the realm's at the
// time of the explanation.
type RoleSource struct {
	Kind           SourceKind `json:"kind"`
	GroupID        string     `json:"groupId,omitempty"`
	Group          string     `json:"group,omitempty"`
	OrganizationID string     `json:"organizationId,omitempty"`
	Organization   string     `json:"organization,omitempty"`
	DepartmentID   string     `json:"departmentId,omitempty"`
	Department     string     `json:"department,omitempty"`
}

// EffectiveRole is a role a subject holds, with every way it holds it.
type EffectiveRole struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Sources []RoleSource `json:"sources"`
}

// Named is an object of the realm by id and name.
type Named struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// SubjectFacts is what a decision knew of its subject: who it is, the
// organization claim it was decided under, the groups it is in and its
// effective roles (sorted by name, each with its sources).
type SubjectFacts struct {
	UserID   string `json:"userId"`
	Username string `json:"username,omitempty"`
	// Known is false for a user id the realm does not hold: no roles, no
	// groups.
	Known bool `json:"known"`
	// Organization is the organization claim as given (an id or alias),
	// empty when the decision counts assignments in every organization;
	// OrganizationID is the organization it names. OrganizationUnknown is
	// set when it names none: then no assignment counts.
	Organization        string          `json:"organization,omitempty"`
	OrganizationID      string          `json:"organizationId,omitempty"`
	OrganizationUnknown bool            `json:"organizationUnknown,omitempty"`
	Groups              []Named         `json:"groups"`
	Roles               []EffectiveRole `json:"roles"`

	byRole map[string]*EffectiveRole
}

// known records u and returns the tracer that records u's roles.
func (f *SubjectFacts) known(r *store.Realm, u *store.User) store.RoleTracer {
	f.Known, f.Username = true, u.Username
	for gid := range u.GroupIDs {
		name := gid
		if g, ok := r.Groups[gid]; ok {
			name = g.Name
		}
		f.Groups = append(f.Groups, Named{ID: gid, Name: name})
	}
	slices.SortFunc(f.Groups, func(a, b Named) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	f.byRole = map[string]*EffectiveRole{}
	return func(roleID string, via store.RoleVia) {
		er, ok := f.byRole[roleID]
		if !ok {
			er = &EffectiveRole{ID: roleID, Name: roleID}
			if ro, ok := r.Roles[roleID]; ok {
				er.Name = ro.Name
			}
			f.byRole[roleID] = er
		}
		src := RoleSource{Kind: FromRealmRole}
		switch {
		case via.Group != nil:
			src = RoleSource{Kind: FromGroup, GroupID: via.Group.ID, Group: via.Group.Name}
		case via.Dept != nil:
			src = RoleSource{Kind: FromOrganization, OrganizationID: via.Dept.OrgID,
				DepartmentID: via.Dept.ID, Department: via.Dept.Name}
			if via.Template {
				src.Kind = FromTemplate
			}
			if o, ok := r.Orgs[via.Dept.OrgID]; ok {
				src.Organization = o.Name
			}
		}
		if !slices.Contains(er.Sources, src) {
			er.Sources = append(er.Sources, src)
		}
	}
}

// finish sorts the roles by name and each role's sources.
func (f *SubjectFacts) finish() {
	f.Roles = make([]EffectiveRole, 0, len(f.byRole))
	for _, er := range f.byRole {
		slices.SortFunc(er.Sources, cmpSource)
		f.Roles = append(f.Roles, *er)
	}
	slices.SortFunc(f.Roles, func(a, b EffectiveRole) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	if f.Groups == nil {
		f.Groups = []Named{}
	}
	f.byRole = nil
}

var kindOrder = map[SourceKind]int{FromRealmRole: 0, FromGroup: 1, FromOrganization: 2, FromTemplate: 3}

func cmpSource(a, b RoleSource) int {
	return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]),
		cmp.Compare(a.Group, b.Group), cmp.Compare(a.Organization, b.Organization),
		cmp.Compare(a.Department, b.Department), cmp.Compare(a.DepartmentID, b.DepartmentID), cmp.Compare(a.GroupID, b.GroupID))
}

// role returns the subject's effective role id, or nil.
func (f *SubjectFacts) role(id string) *EffectiveRole {
	i := slices.IndexFunc(f.Roles, func(er EffectiveRole) bool { return er.ID == id })
	if i < 0 {
		return nil
	}
	return &f.Roles[i]
}

// ExplainSubject computes the subject of userID under the organization
// claim org exactly as SubjectOf does (the same walk of the realm), and
// what it found: the subject's groups and effective roles with their
// sources. Call it inside the realm's read lock.
func ExplainSubject(r *store.Realm, userID, org string) (Subject, SubjectFacts) {
	sub := Subject{UserID: userID, Roles: make(store.Set, 8)}
	f := SubjectFacts{UserID: userID, Organization: org}
	sub.load(r, org, &f)
	f.finish()
	return sub, f
}

// EffectiveRoles returns userID's effective roles under the organization
// claim org ("" for every organization; an id or alias), sorted by name,
// each with every source it comes from: the roles a decision counts, from
// the same walk of the realm. An unknown user has none. Call it inside the
// realm's read lock; the result shares nothing with the realm.
func EffectiveRoles(r *store.Realm, userID, org string) []EffectiveRole {
	_, f := ExplainSubject(r, userID, org)
	return f.Roles
}

// FactCheck is one role, group or user a permission names, and whether the
// subject matched it. Sources, for a role the subject holds, say how.
type FactCheck struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Matched bool         `json:"matched"`
	Sources []RoleSource `json:"sources,omitempty"`
}

// MethodCheck is a permission's method limit: the methods it allows, the
// request's method ("" when the request gave none) and whether it is one.
type MethodCheck struct {
	Allowed []string `json:"allowed"`
	Method  string   `json:"method"`
	Matched bool     `json:"matched"`
}

// OwnerCheck is a permission's ownership rule: the resource property that
// must hold the subject's username or email, whether the request named a
// resource instance, the property's value when it is a string, and
// whether it names the subject.
type OwnerCheck struct {
	Property string `json:"property"`
	Instance bool   `json:"instance"`
	Value    string `json:"value,omitempty"`
	Present  bool   `json:"present"`
	Matched  bool   `json:"matched"`
}

// PermissionCheck is one permission that applies to a pair, and what
// testing it found. Matched is whether it grants: its method limit and
// ownership rule (when it has them) hold and one of the roles, groups or
// users it names matches.
type PermissionCheck struct {
	Name    string       `json:"name"`
	Matched bool         `json:"matched"`
	Method  *MethodCheck `json:"method,omitempty"`
	Owner   *OwnerCheck  `json:"owner,omitempty"`
	Roles   []FactCheck  `json:"roles,omitempty"`
	Groups  []FactCheck  `json:"groups,omitempty"`
	Users   []FactCheck  `json:"users,omitempty"`
}

// Undefined says which part of an ERROR pair the client does not define.
type Undefined string

// What an ERROR pair lacks.
const (
	undefinedNone     Undefined = ""
	undefinedResource Undefined = "resource"
	undefinedScope    Undefined = "scope"
)

// PairExplanation is one pair's status and its reasons: every permission
// that applies to it, in the client's order. Undefined is "resource" or
// "scope" for an ERROR pair. Reason is the same in one sentence.
type PairExplanation struct {
	Resource    string            `json:"resource"`
	Scope       string            `json:"scope"`
	Status      Status            `json:"status"`
	Undefined   Undefined         `json:"undefined,omitempty"`
	Reason      string            `json:"reason"`
	Permissions []PermissionCheck `json:"policies"`
}

// tracer records a request's pairs as the evaluation decides them.
type tracer struct {
	max       int // pairs recorded at most; 0: every pair
	more      int // pairs decided past max, not recorded
	pairs     []PairExplanation
	checks    []PermissionCheck // of the pair being decided
	undefined Undefined         // of the pair being decided
}

// next is the tracer that records the next pair: t, or nil (the pair is
// decided, not recorded, and counted in more) once t holds max pairs.
// A nil t stays nil.
func (t *tracer) next() *tracer {
	if t == nil || t.max <= 0 || len(t.pairs) < t.max {
		return t
	}
	t.more++
	return nil
}

// check starts the record of permission name for the current pair.
func (t *tracer) check(name string) *PermissionCheck {
	t.checks = append(t.checks, PermissionCheck{Name: name})
	return &t.checks[len(t.checks)-1]
}

// pair closes the current pair's record with its status.
func (t *tracer) pair(resource, scope string, st Status) {
	checks := t.checks
	if checks == nil {
		checks = []PermissionCheck{}
	}
	t.pairs = append(t.pairs, PairExplanation{Resource: resource, Scope: scope, Status: st, Undefined: t.undefined, Permissions: checks})
	t.checks, t.undefined = nil, undefinedNone
}

// Request is a decision to explain: the subject's user id and organization
// claim, the pairs as Evaluate takes them, the request context's method
// and path (no permission reads the path; it is recorded). ByPair
// explains each listed pair as Decide decides it (AuthZEN: "*" is no
// resource, a resource without scopes no pair), for the resource instance
// whose properties are Properties (nil: no instance).
type Request struct {
	UserID       string
	Organization string
	Resources    []Resource
	Method       string
	Path         string
	ByPair       bool
	Properties   map[string]any
	// MaxPairs bounds the pairs explained (0: every pair): past it each
	// pair is still decided, so Status is the whole request's, but not
	// recorded, only counted in MorePairs. The web UI sets it, so that a
	// "*" over a large client costs a bounded record under the realm's
	// lock.
	MaxPairs int
}

// Explanation is a decision with its reasons. Status and Pairs' statuses
// are those Evaluate answers for the same request and realm state: they
// are decided by the same code, which recorded what it saw.
type Explanation struct {
	Client  string            `json:"clientId"`
	Status  Status            `json:"status"`
	Subject SubjectFacts      `json:"subject"`
	Method  string            `json:"method"`
	Path    string            `json:"path,omitempty"`
	Pairs   []PairExplanation `json:"results"`
	// MorePairs is the number of pairs decided past Request.MaxPairs and
	// not explained; always 0 without MaxPairs.
	MorePairs int `json:"-"`
}

// Explain decides req as Evaluate does (or, with ByPair, each pair as
// Decide does) and records why: every permission that applies to each
// pair, whether it matched and the facts it matched on or missed, and the
// subject's effective roles with their sources. Names are read from r;
// call it inside the realm's read lock. Client is left for the caller.
func (p *Policy) Explain(r *store.Realm, req Request) Explanation {
	sub, facts := ExplainSubject(r, req.UserID, req.Organization)
	tr := &tracer{max: req.MaxPairs}
	var st Status
	if req.ByPair {
		perms := make([]Permission, 0, len(req.Resources))
		for _, rs := range req.Resources {
			for _, s := range rs.Scopes {
				perms = append(perms, Permission{Resource: rs.Name, Scope: s,
					Status: p.decidePair(&sub, rs.Name, s, req.Method, req.Properties, tr)})
			}
		}
		st = Overall(perms)
	} else {
		st = p.evaluate(&sub, req.Resources, req.Method, tr).Status
	}
	for i := range tr.pairs {
		pe := &tr.pairs[i]
		for j := range pe.Permissions {
			pc := &pe.Permissions[j]
			name(r, &facts, pc)
			if pc.Method != nil {
				pc.Method.Method = req.Method
			}
			if oc := pc.Owner; oc != nil {
				v := req.Properties[oc.Property]
				oc.Instance, oc.Present = req.Properties != nil, v != nil
				oc.Value, _ = v.(string)
			}
		}
		pe.Reason = reason(pe)
	}
	if tr.pairs == nil {
		tr.pairs = []PairExplanation{}
	}
	return Explanation{Status: st, Subject: facts, Method: req.Method, Path: req.Path, Pairs: tr.pairs, MorePairs: tr.more}
}

// name fills in the names of the roles, groups and users pc names, and
// the sources of the roles the subject holds.
func name(r *store.Realm, f *SubjectFacts, pc *PermissionCheck) {
	for i := range pc.Roles {
		fc := &pc.Roles[i]
		fc.Name = fc.ID
		if ro, ok := r.Roles[fc.ID]; ok {
			fc.Name = ro.Name
		}
		if er := f.role(fc.ID); er != nil && fc.Matched {
			fc.Sources = er.Sources
		}
	}
	for i := range pc.Groups {
		fc := &pc.Groups[i]
		fc.Name = fc.ID
		if g, ok := r.Groups[fc.ID]; ok {
			fc.Name = g.Name
		}
	}
	for i := range pc.Users {
		fc := &pc.Users[i]
		fc.Name = fc.ID
		if u, ok := r.Users[fc.ID]; ok {
			fc.Name = u.Username
		}
	}
}

// reason says in one sentence why pe has its status.
func reason(pe *PairExplanation) string {
	switch {
	case pe.Undefined == undefinedResource:
		return fmt.Sprintf("the client defines no resource %s", quoted(pe.Resource))
	case pe.Undefined == undefinedScope && pe.Resource == Wildcard && pe.Scope == "":
		return "the client defines no resource with a scope"
	case pe.Undefined == undefinedScope && pe.Resource == Wildcard:
		return fmt.Sprintf("no resource of the client defines scope %s", quoted(pe.Scope))
	case pe.Undefined == undefinedScope && pe.Scope == "":
		return fmt.Sprintf("resource %s defines no scopes", quoted(pe.Resource))
	case pe.Undefined == undefinedScope:
		return fmt.Sprintf("resource %s defines no scope %s", quoted(pe.Resource), quoted(pe.Scope))
	case pe.Status == Grant:
		for _, pc := range pe.Permissions {
			if pc.Matched {
				return fmt.Sprintf("permission %s grants it", quoted(pc.Name))
			}
		}
	case len(pe.Permissions) == 0:
		return "no permission applies to this resource and scope"
	}
	return fmt.Sprintf("none of the %d permissions that apply grants it", len(pe.Permissions))
}
