package store

import (
	"cmp"
	"math/bits"
	"slices"
	"time"
)

// lookupUser returns the realm user with the given id, or ErrNotFound.
func (r *Realm) lookupUser(id string) (*User, error) {
	return find(r.Users, id, "user %q", id)
}

// Assign places user userID in department deptID. Assignments are additive:
// a user keeps every other assignment. A repeat changes nothing and returns
// the original assignment with created false. Errors: ErrNotFound for an
// unknown user or department.
func (r *Realm) Assign(userID, deptID string, now time.Time) (a Assignment, created bool, err error) {
	d, ok := r.Depts[deptID]
	if !ok {
		return Assignment{}, false, NotFound("department %q", deptID)
	}
	u, err := r.lookupUser(userID)
	if err != nil {
		return Assignment{}, false, err
	}
	if at, ok := r.heldOf(u)[d.h]; ok {
		return assignment(userID, deptID, at), false, nil
	}
	at := now.Unix()
	setAdd(r.h.byUser, u.h, d.h, at)
	setAdd(r.h.byDept, d.h, u.h, at)
	r.assignments++
	return assignment(userID, deptID, at), true, nil
}

// Assignment returns the assignment of userID to deptID, if there is one.
func (r *Realm) Assignment(userID, deptID string) (Assignment, bool) {
	u, d := r.Users[userID], r.Depts[deptID]
	if u == nil || d == nil {
		return Assignment{}, false
	}
	at, ok := r.heldOf(u)[d.h]
	if !ok {
		return Assignment{}, false
	}
	return assignment(userID, deptID, at), true
}

// assignment builds the Assignment of userID to deptID made at Unix second
// at.
func assignment(userID, deptID string, at int64) Assignment {
	return Assignment{UserID: userID, DepartmentID: deptID, AssignedAt: time.Unix(at, 0).UTC()}
}

// Unassign removes the assignment of userID to deptID, or returns
// ErrNotFound when there is none.
func (r *Realm) Unassign(userID, deptID string) error {
	if _, ok := r.Assignment(userID, deptID); !ok {
		return NotFound("user %q is not assigned to department %q", userID, deptID)
	}
	r.removeAssignment(r.Users[userID].h, r.Depts[deptID].h)
	return nil
}

// removeAssignment removes the assignment of user handle uh to department
// handle dh from both indexes, dropping emptied sets.
func (r *Realm) removeAssignment(uh, dh uint32) {
	setRemove(r.h.byUser, uh, dh)
	setRemove(r.h.byDept, dh, uh)
	r.assignments--
}

// AssignmentCount returns how many assignments the realm holds.
func (r *Realm) AssignmentCount() int { return r.assignments }

// DepartmentUser is an assignment with the user's name.
type DepartmentUser struct {
	Assignment
	Username string
}

// DepartmentUsers returns the assignments of department deptID of
// organization orgID, sorted by username then user id.
func (r *Realm) DepartmentUsers(orgID, deptID string) ([]DepartmentUser, error) {
	d, err := r.Department(orgID, deptID)
	if err != nil {
		return nil, err
	}
	holders := r.holdersOf(d)
	out := make([]DepartmentUser, 0, len(holders))
	for uh, at := range holders {
		u := r.h.users[uh]
		out = append(out, DepartmentUser{Assignment: assignment(u.ID, deptID, at), Username: u.Username})
	}
	slices.SortFunc(out, func(a, b DepartmentUser) int {
		return cmp.Or(cmp.Compare(a.Username, b.Username), cmp.Compare(a.UserID, b.UserID))
	})
	return out, nil
}

// UserAssignment is an assignment with its organization and department.
type UserAssignment struct {
	Assignment
	Org  *Organization
	Dept *Department
}

// UserAssignments returns the assignments of a user, sorted by organization
// name, department name, then ids. Errors: ErrNotFound for an unknown user.
func (r *Realm) UserAssignments(userID string) ([]UserAssignment, error) {
	u, err := r.lookupUser(userID)
	if err != nil {
		return nil, err
	}
	held := r.heldOf(u)
	out := make([]UserAssignment, 0, len(held))
	for dh, at := range held {
		d := r.h.depts[dh]
		out = append(out, UserAssignment{Assignment: assignment(userID, d.ID, at), Org: r.Orgs[d.OrgID], Dept: d})
	}
	slices.SortFunc(out, func(a, b UserAssignment) int {
		return cmp.Or(byName(a.Org.Name, a.Org.ID, b.Org.Name, b.Org.ID),
			byName(a.Dept.Name, a.Dept.ID, b.Dept.Name, b.Dept.ID))
	})
	return out, nil
}

// OrgNode is an organization with department subtrees.
type OrgNode struct {
	Org      *Organization
	Children []*DeptNode
}

// AssignmentTree returns the organizations a user is assigned in, each with
// its department tree pruned to the paths that lead to the user's
// departments (the departments below an assigned one are left out unless
// the user is assigned further down). Sorted by name then id at every level.
// It costs the paths it returns (at most the depth limit per assignment),
// whatever the size of the organizations.
func (r *Realm) AssignmentTree(userID string) ([]*OrgNode, error) {
	u, err := r.lookupUser(userID)
	if err != nil {
		return nil, err
	}
	// Walk up from each assigned department until a department already on
	// the tree; each one on the way becomes a node hung under its parent's
	// node, or under its organization's.
	assigned := r.heldOf(u)
	nodes := make(map[string]*DeptNode, 2*len(assigned)) // sized: growing them was a third of the cost
	orgs := make(map[string]*OrgNode, len(assigned))
	for dh := range assigned {
		var child *DeptNode // made in the previous step, to hang under this one
		for d := r.h.depts[dh]; d != nil; d = r.Depts[d.ParentID] {
			n, seen := nodes[d.ID]
			if !seen {
				n = &DeptNode{Dept: d, Children: []*DeptNode{}}
				nodes[d.ID] = n
			}
			if child != nil {
				n.Children = append(n.Children, child)
			}
			if seen {
				break
			}
			child = n
			if d.ParentID == d.OrgID {
				o, ok := orgs[d.OrgID]
				if !ok {
					o = &OrgNode{Org: r.Orgs[d.OrgID], Children: []*DeptNode{}}
					orgs[d.OrgID] = o
				}
				o.Children = append(o.Children, n)
				break
			}
		}
	}
	byDept := func(a, b *DeptNode) int { return cmpDept(a.Dept, b.Dept) }
	for _, n := range nodes {
		if len(n.Children) > 1 {
			slices.SortFunc(n.Children, byDept)
		}
	}
	for _, o := range orgs {
		if len(o.Children) > 1 {
			slices.SortFunc(o.Children, byDept)
		}
	}
	return r.inOrgOrder(orgs), nil
}

// inOrgOrder returns the nodes of orgs in the realm's order of
// organizations, whichever costs less: sorting them (k log k name
// comparisons for k nodes), or picking them from the realm's sorted list
// (one lookup per organization of the realm), which is what a user in most
// organizations costs.
func (r *Realm) inOrgOrder(orgs map[string]*OrgNode) []*OrgNode {
	out := make([]*OrgNode, 0, len(orgs))
	if k := len(orgs); k*bits.Len(uint(k)) > len(r.orgList) {
		for _, o := range r.orgList {
			if n, ok := orgs[o.ID]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	for _, o := range orgs {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *OrgNode) int { return cmpOrg(a.Org, b.Org) })
	return out
}

// UserOrgRoleIDs returns the role ids a user holds through assignments: for
// each assignment, the roles linked to its organization and the template
// roles of its department. A non-empty orgID counts only assignments in that
// organization (a token's organization claim). Direct and group roles are
// not included.
func (r *Realm) UserOrgRoleIDs(userID, orgID string) Set {
	out := Set{}
	r.AddOrgRoles(userID, orgID, out)
	return out
}

// AddOrgRoles adds to into the roles userID holds through assignments: for
// each of the user's departments (only those of orgID when it is not empty),
// the roles linked to the department's organization and the department's
// template roles. The decision engine calls it on every decision, so it
// allocates nothing of its own.
func (r *Realm) AddOrgRoles(userID, orgID string, into Set) {
	r.TraceOrgRoles(userID, orgID, into, nil)
}

// TraceOrgRoles is AddOrgRoles telling trace, when it is not nil, each role
// it adds with the department whose assignment brings it (RoleVia.Dept) and
// whether it is that department's template role or one linked to its
// organization. It is the one walk of a user's roles through assignments:
// AddOrgRoles is this walk untraced.
func (r *Realm) TraceOrgRoles(userID, orgID string, into Set, trace RoleTracer) {
	u, ok := r.Users[userID]
	if !ok {
		return
	}
	for dh := range r.heldOf(u) {
		d := r.h.depts[dh]
		if orgID != "" && d.OrgID != orgID {
			continue
		}
		for rid := range r.OrgRoles[d.OrgID] {
			into[rid] = struct{}{}
			if trace != nil {
				trace(rid, RoleVia{Dept: d})
			}
		}
		for _, rid := range d.TemplateRoleIDs {
			into[rid] = struct{}{}
			if trace != nil {
				trace(rid, RoleVia{Dept: d, Template: true})
			}
		}
	}
}

// Membership is one organization a user is assigned in, with the user's
// departments there.
type Membership struct {
	Org   *Organization
	Depts []*Department
}

// ClaimedOrganization resolves a token's organization claim, an
// organization id or alias: limit is the organization's id, "" for no
// claim (every organization counts); ok is false for a claim that names
// no organization, under which none counts. Every answer about a subject
// reads the claim through it.
func (r *Realm) ClaimedOrganization(claim string) (limit string, ok bool) {
	if claim == "" {
		return "", true
	}
	if _, ok := r.Orgs[claim]; ok {
		return claim, true
	}
	id, ok := r.OrgByAlias[claim]
	return id, ok
}

// UserOrganizations returns the organizations a user is assigned in,
// deduplicated and sorted by name then id, each with the user's departments
// sorted the same way. claim is the token's organization claim
// (ClaimedOrganization): only that organization, none for one that names
// none, every one for "". An unknown user or one without assignments gets
// none.
func (r *Realm) UserOrganizations(userID, claim string) []Membership {
	byOrg := map[string][]*Department{}
	limit, known := r.ClaimedOrganization(claim)
	if u, ok := r.Users[userID]; ok && known {
		for dh := range r.heldOf(u) {
			if d := r.h.depts[dh]; limit == "" || d.OrgID == limit {
				byOrg[d.OrgID] = append(byOrg[d.OrgID], d)
			}
		}
	}
	out := make([]Membership, 0, len(byOrg))
	for oid, ds := range byOrg {
		sortDepts(ds)
		out = append(out, Membership{Org: r.Orgs[oid], Depts: ds})
	}
	slices.SortFunc(out, func(a, b Membership) int { return byName(a.Org.Name, a.Org.ID, b.Org.Name, b.Org.ID) })
	return out
}

// indexAdd adds v to the set m[k], allocating it when needed.
func indexAdd(m map[string]Set, k, v string) {
	s, ok := m[k]
	if !ok {
		s = Set{}
		m[k] = s
	}
	s[v] = struct{}{}
}

// indexRemove removes v from m[k] and drops m[k] once empty.
func indexRemove(m map[string]Set, k, v string) {
	if s, ok := m[k]; ok {
		delete(s, v)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}
