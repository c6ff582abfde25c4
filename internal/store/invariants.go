package store

import (
	"errors"
	"fmt"
)

// CheckInvariants checks that every realm's organization data is consistent
// (see (*Realm).CheckInvariants), each realm under its own read lock, and
// that the store's maps agree with the realms they hold. Tests call it after
// concurrent or cascading changes.
func (s *Store) CheckInvariants() error {
	var errs []error
	s.mu.RLock()
	realms := make([]*Realm, 0, len(s.realms))
	for name, r := range s.realms {
		if r.Name != name {
			errs = append(errs, fmt.Errorf("realm %q stored under %q", r.Name, name))
		}
		if r.Tenant != nil && s.tenants[r.Tenant.ID] != r {
			errs = append(errs, fmt.Errorf("realm %q: tenant %q not indexed", name, r.Tenant.ID))
		}
		realms = append(realms, r)
	}
	for id, r := range s.tenants {
		if r.Tenant == nil || r.Tenant.ID != id || s.realms[r.Name] != r {
			errs = append(errs, fmt.Errorf("tenant %q: index names another realm", id))
		}
	}
	s.mu.RUnlock()
	for _, r := range realms {
		r.mu.RLock()
		err := r.CheckInvariants()
		r.mu.RUnlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("realm %q: %w", r.Name, err))
		}
	}
	return errors.Join(errs...)
}

// CheckInvariants reports every way the realm's organization data breaks the
// rules its operations keep: indexes agree with their primary maps, nothing
// points at something missing (no orphan department, assignment, link or
// template), and department depths and aliases are consistent. Empty index
// sets are allowed (the fixture loader makes them) as long as their key
// exists.
func (r *Realm) CheckInvariants() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for alias, id := range r.OrgByAlias {
		if o, ok := r.Orgs[id]; !ok || o.Alias != alias {
			bad("OrgByAlias[%q] = %q does not match an organization", alias, id)
		}
	}
	for id, o := range r.Orgs {
		if o.ID != id {
			bad("organization %q stored under %q", o.ID, id)
		}
		if r.OrgByAlias[o.Alias] != id {
			bad("organization %q: alias %q not indexed", id, o.Alias)
		}
	}
	for name, id := range r.RoleByName {
		if role, ok := r.Roles[id]; !ok || role.Name != name {
			bad("RoleByName[%q] = %q does not match a role", name, id)
		}
	}

	deptAlias := map[[2]string]string{}
	for id, d := range r.Depts {
		if d.ID != id {
			bad("department %q stored under %q", d.ID, id)
		}
		if _, ok := r.Orgs[d.OrgID]; !ok {
			bad("department %q: organization %q missing", id, d.OrgID)
		}
		switch p, ok := r.Depts[d.ParentID]; {
		case d.ParentID == d.OrgID:
			if d.Depth != 1 {
				bad("root department %q has depth %d", id, d.Depth)
			}
		case !ok:
			bad("department %q: parent %q missing", id, d.ParentID)
		case p.OrgID != d.OrgID:
			bad("department %q: parent %q in another organization", id, d.ParentID)
		case d.Depth != p.Depth+1:
			bad("department %q: depth %d under a parent of depth %d", id, d.Depth, p.Depth)
		}
		if d.Depth < 1 || d.Depth > MaxDepartmentDepth {
			bad("department %q: depth %d out of range", id, d.Depth)
		}
		if d.Alias != "" {
			k := [2]string{d.OrgID, d.Alias}
			if other, dup := deptAlias[k]; dup {
				bad("departments %q and %q share alias %q", other, id, d.Alias)
			}
			deptAlias[k] = id
		}
		for _, rid := range d.TemplateRoleIDs {
			if _, ok := r.Roles[rid]; !ok {
				bad("department %q: template role %q missing", id, rid)
			}
		}
	}

	for k, a := range r.Assignments {
		if a.UserID != k.UserID || a.DepartmentID != k.DepartmentID {
			bad("assignment %v holds %q/%q", k, a.UserID, a.DepartmentID)
		}
		if _, ok := r.Users[k.UserID]; !ok {
			bad("assignment %v: user missing", k)
		}
		if d, ok := r.Depts[k.DepartmentID]; !ok {
			bad("assignment %v: department missing", k)
		} else if d.OrgID != a.OrgID {
			bad("assignment %v: organization %q, department's is %q", k, a.OrgID, d.OrgID)
		}
		if _, ok := r.AssignmentsByUser[k.UserID][k.DepartmentID]; !ok {
			bad("assignment %v missing from AssignmentsByUser", k)
		}
		if _, ok := r.AssignmentsByDept[k.DepartmentID][k.UserID]; !ok {
			bad("assignment %v missing from AssignmentsByDept", k)
		}
	}
	// checkIndex checks one of the two assignment indexes against
	// Assignments; key builds the assignment key of an index entry.
	checkIndex := func(name, kind string, idx map[string]Set, exists func(string) bool, key func(k, v string) AssignmentKey) {
		n := 0
		for k, vs := range idx {
			if !exists(k) && len(vs) == 0 {
				bad("%s[%q]: empty set of a missing %s", name, k, kind)
			}
			for v := range vs {
				n++
				if _, ok := r.Assignments[key(k, v)]; !ok {
					bad("%s[%q] has %q without an assignment", name, k, v)
				}
			}
		}
		if n != len(r.Assignments) {
			bad("%s holds %d entries for %d assignments", name, n, len(r.Assignments))
		}
	}
	checkIndex("AssignmentsByUser", "user", r.AssignmentsByUser,
		func(id string) bool { _, ok := r.Users[id]; return ok },
		func(uid, did string) AssignmentKey { return AssignmentKey{UserID: uid, DepartmentID: did} })
	checkIndex("AssignmentsByDept", "department", r.AssignmentsByDept,
		func(id string) bool { _, ok := r.Depts[id]; return ok },
		func(did, uid string) AssignmentKey { return AssignmentKey{UserID: uid, DepartmentID: did} })

	checkLinks := func(name string, m map[string]Set, exists func(string) bool) {
		for oid, ids := range m {
			if _, ok := r.Orgs[oid]; !ok {
				bad("%s: organization %q missing", name, oid)
			}
			for id := range ids {
				if !exists(id) {
					bad("%s[%q]: %q missing", name, oid, id)
				}
			}
		}
	}
	checkLinks("OrgRoles", r.OrgRoles, func(id string) bool { _, ok := r.Roles[id]; return ok })
	checkLinks("OrgGroups", r.OrgGroups, func(id string) bool { _, ok := r.Groups[id]; return ok })
	checkLinks("OrgApps", r.OrgApps, func(id string) bool { _, ok := r.Apps[id]; return ok })
	for gid, oid := range r.GroupOrg {
		if _, ok := r.OrgGroups[oid][gid]; !ok {
			bad("GroupOrg[%q] = %q but the organization does not list it", gid, oid)
		}
	}
	for oid, gs := range r.OrgGroups {
		for gid := range gs {
			if r.GroupOrg[gid] != oid {
				bad("OrgGroups[%q] lists %q but GroupOrg says %q", oid, gid, r.GroupOrg[gid])
			}
		}
	}

	for cid, id := range r.AppByID {
		if a, ok := r.Apps[id]; !ok || a.ClientID != cid {
			bad("AppByID[%q] = %q does not match an application", cid, id)
		}
	}
	for id, a := range r.Apps {
		if r.AppByID[a.ClientID] != id {
			bad("application %q: clientId %q not indexed", id, a.ClientID)
		}
		if _, ok := r.ClientByID[a.ClientID]; !ok {
			bad("application %q: client %q missing", id, a.ClientID)
		}
	}
	for id, t := range r.PropTmpls {
		if _, ok := r.Orgs[t.OrgID]; !ok {
			bad("property template %q: organization %q missing", id, t.OrgID)
		}
	}
	for id, t := range r.DeptTmpls {
		if _, ok := r.Orgs[t.OrgID]; !ok {
			bad("department template %q: organization %q missing", id, t.OrgID)
		}
	}
	return errors.Join(errs...)
}
