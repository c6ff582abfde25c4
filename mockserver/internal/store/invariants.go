package store

import (
	"errors"
	"fmt"
	"strings"
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

	checkIndex(bad, "OrgByAlias", r.OrgByAlias, r.Orgs, "an organization", "alias", func(o *Organization) string { return o.Alias })
	for id, o := range r.Orgs {
		if o.ID != id {
			bad("organization %q stored under %q", o.ID, id)
		}
	}
	checkIndex(bad, "RoleByName", r.RoleByName, r.Roles, "a role", "name", func(ro *Role) string { return ro.Name })

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

	r.checkHandles(bad)

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

	checkIndex(bad, "AppByID", r.AppByID, r.Apps, "an application", "clientId", func(a *Application) string { return a.ClientID })
	for id, a := range r.Apps {
		if _, ok := r.ClientByID[a.ClientID]; !ok {
			bad("application %q: client %q missing", id, a.ClientID)
		}
	}
	for id, t := range r.PropTmpls {
		if _, ok := r.Orgs[t.OrgID]; !ok {
			bad("property template %q: organization %q missing", id, t.OrgID)
		} else if _, ok := r.orgs[t.OrgID].propTmpls[id]; !ok {
			bad("property template %q: not in its organization's index", id)
		}
	}
	for id, t := range r.DeptTmpls {
		if _, ok := r.Orgs[t.OrgID]; !ok {
			bad("department template %q: organization %q missing", id, t.OrgID)
		} else if _, ok := r.orgs[t.OrgID].deptTmpls[id]; !ok {
			bad("department template %q: not in its organization's index", id)
		}
	}
	checkMirror(bad, r.AppOrgs, r.OrgApps, "AppOrgs[%q] lists %q but the organization does not")
	checkMirror(bad, r.OrgApps, r.AppOrgs, "OrgApps[%q] lists %q but AppOrgs does not")
	checkIndex(bad, "GroupByName", r.GroupByName, r.Groups, "a group", "name", func(g *Group) string { return g.Name })
	r.checkLists(bad)
	r.checkOrgIndexes(bad)
	return errors.Join(errs...)
}

// checkMirror checks that y holds every pair of x the other way round
// (y[b][a] for each b of x[a]); said is the failure's message, of a and b.
func checkMirror(bad func(string, ...any), x, y map[string]Set, said string) {
	for a, bs := range x {
		for b := range bs {
			if _, ok := y[b][a]; !ok {
				bad(said, a, b)
			}
		}
	}
}

// checkIndex checks an index (key -> id) against the items it indexes, both
// ways: each entry names an item whose key (of keyName) it is, and each item
// is indexed under its key. a names the kind of item ("a role").
func checkIndex[T any](bad func(string, ...any), indexName string, index map[string]string, items map[string]T, a, keyName string, key func(T) string) {
	for k, id := range index {
		if it, ok := items[id]; !ok || key(it) != k {
			bad("%s[%q] = %q does not match %s", indexName, k, id, a)
		}
	}
	noun := a[strings.IndexByte(a, ' ')+1:]
	for id, it := range items {
		if index[key(it)] != id {
			bad("%s %q: %s %q not indexed", noun, id, keyName, key(it))
		}
	}
}

// checkLists checks the realm's sorted lists of organizations, roles and
// user ids and its set of global roles against the maps they index.
func (r *Realm) checkLists(bad func(string, ...any)) {
	if r.userIDs.Len() != len(r.Users) {
		bad("userIDs holds %d ids for %d users", r.userIDs.Len(), len(r.Users))
	}
	if err := r.userIDs.check(strings.Compare); err != nil {
		bad("userIDs: %v", err)
	}
	for id := range r.userIDs.All() {
		if u, ok := r.Users[id]; !ok || u.ID != id {
			bad("userIDs holds %q, which is no user", id)
		}
	}
	checkSorted(bad, "orgList", "organizations", "an organization", r.orgList, r.Orgs, cmpOrg)
	checkSorted(bad, "roleList", "roles", "a role", r.roleList, r.Roles, cmpRole)
	for id, ro := range r.Roles {
		if _, ok := r.globalRoles[id]; ok != ro.IsGlobal() {
			bad("role %q: global %v but globalRoles says %v", id, ro.IsGlobal(), ok)
		}
	}
}

// checkSorted checks list, named name, the sorted list of m's values
// (plural, each one of them): one for each value, sorted by cmp.
func checkSorted[T interface{ key() string }](bad func(string, ...any), name, plural, one string, list []T, m map[string]T, cmp func(a, b T) int) {
	if len(list) != len(m) {
		bad("%s holds %d %s for %d", name, len(list), plural, len(m))
	}
	for i, v := range list {
		if any(m[v.key()]) != any(v) {
			bad("%s[%d] = %q is not %s", name, i, v.key(), one)
		}
		if i > 0 && cmp(list[i-1], v) >= 0 {
			bad("%s is not sorted at %d", name, i)
		}
	}
}

func (o *Organization) key() string { return o.ID }
func (r *Role) key() string         { return r.ID }

// checkOrgIndexes checks each organization's index against Depts: every
// department sits once in its parent's sorted child list, aliases and counts
// agree, and no index belongs to a missing organization.
func (r *Realm) checkOrgIndexes(bad func(string, ...any)) {
	for oid := range r.Orgs {
		if _, ok := r.orgs[oid]; !ok {
			bad("organization %q has no index", oid)
		}
	}
	// listed counts how many times each department sits in a child list,
	// which must be once, in its parent's (checked below).
	listed := map[*Department]int{}
	for _, ix := range r.orgs {
		for _, kids := range ix.children {
			for d := range kids.All() {
				listed[d]++
			}
		}
	}
	counts := map[string]int{}
	for id, d := range r.Depts {
		counts[d.OrgID]++
		ix, ok := r.orgs[d.OrgID]
		if !ok {
			continue // reported above as a department of a missing organization
		}
		if n := listed[d]; n != 1 {
			bad("department %q is %d times in a child list", id, n)
		}
		if d.Alias != "" && ix.aliases[d.Alias] != id {
			bad("department %q: alias %q not indexed", id, d.Alias)
		}
	}
	for oid, ix := range r.orgs {
		if _, ok := r.Orgs[oid]; !ok {
			bad("index of a missing organization %q", oid)
		}
		if ix.depts != counts[oid] {
			bad("organization %q: index counts %d departments for %d", oid, ix.depts, counts[oid])
		}
		for parent, kids := range ix.children {
			if kids.Len() == 0 {
				bad("organization %q: empty child list of %q", oid, parent)
			}
			if err := kids.check(cmpDept); err != nil {
				bad("organization %q: child list of %q: %v", oid, parent, err)
			}
			for d := range kids.All() {
				if r.Depts[d.ID] != d || d.OrgID != oid || d.ParentID != parent {
					bad("organization %q: child list of %q holds %q", oid, parent, d.ID)
				}
			}
		}
		for alias, id := range ix.aliases {
			if d, ok := r.Depts[id]; !ok || d.Alias != alias || d.OrgID != oid {
				bad("organization %q: alias %q names %q", oid, alias, id)
			}
		}
		props, required := 0, 0
		for id := range ix.propTmpls {
			t, ok := r.PropTmpls[id]
			if !ok || t.OrgID != oid {
				bad("organization %q: property template %q missing", oid, id)
				continue
			}
			for i := range t.Properties {
				p := &t.Properties[i]
				props++
				if ref := ix.props[p.Key]; ref.tmpl != t || ref.prop != p {
					bad("organization %q: property %q of template %q not indexed", oid, p.Key, id)
				}
				if _, ok := ix.required[p.Key]; ok != p.Required {
					bad("organization %q: property %q required %v but the index says %v", oid, p.Key, p.Required, ok)
				}
				if p.Required {
					required++
				}
			}
		}
		if len(ix.props) != props || len(ix.required) != required {
			bad("organization %q: %d properties (%d required) indexed for %d (%d)",
				oid, len(ix.props), len(ix.required), props, required)
		}
		for id := range ix.deptTmpls {
			if t, ok := r.DeptTmpls[id]; !ok || t.OrgID != oid {
				bad("organization %q: department template %q missing", oid, id)
			}
		}
	}
}

// checkHandles checks the handle tables and the assignment indexes
// (handles.go): user and department handles are bijective with Users and
// Depts, the free list holds exactly the unused department handles, once
// each, and holds none with an assignment left, every assignment names a
// live user and department and is mirrored with the same time in the other
// index, no set is empty, and AssignmentCount counts them.
// checkHandleTable checks that a handle table and the map by id name the
// same things, each under its own handle, and returns how many handles are
// in use.
func checkHandleTable[T any](bad func(string, ...any), kind string, table []*T, byID map[string]*T, idh func(*T) (string, uint32)) int {
	n := 0
	for h, x := range table {
		if x == nil {
			continue
		}
		n++
		if id, xh := idh(x); xh != uint32(h) || byID[id] != x {
			bad("%s handle %d names %s %q (handle %d), not the realm's", kind, h, kind, id, xh)
		}
	}
	if n != len(byID) {
		bad("%d %s handles for %d %ss", n, kind, len(byID), kind)
	}
	for id, x := range byID {
		if _, xh := idh(x); xh == 0 || int(xh) >= len(table) || table[xh] != x {
			bad("%s %q: handle %d does not name it", kind, id, xh)
		}
	}
	return n
}

func (r *Realm) checkHandles(bad func(string, ...any)) {
	h := &r.h
	if len(h.users) != len(h.byUser) || len(h.depts) != len(h.byDept) {
		bad("handle tables of %d users / %d sets, %d departments / %d sets",
			len(h.users), len(h.byUser), len(h.depts), len(h.byDept))
		return
	}
	if len(h.users) > 0 && h.users[0] != nil || len(h.depts) > 0 && h.depts[0] != nil {
		bad("handle 0 is given out")
	}
	checkHandleTable(bad, "user", h.users, r.Users, func(u *User) (string, uint32) { return u.ID, u.h })
	depts := checkHandleTable(bad, "department", h.depts, r.Depts, func(d *Department) (string, uint32) { return d.ID, d.h })
	freed := make(map[uint32]bool, len(h.free))
	for _, dh := range h.free {
		switch {
		case dh == 0 || int(dh) >= len(h.depts):
			bad("free department handle %d out of range", dh)
			continue
		case freed[dh]:
			bad("department handle %d free twice", dh)
		case h.depts[dh] != nil:
			bad("department handle %d is free and names department %q", dh, h.depts[dh].ID)
		case h.byDept[dh] != nil:
			bad("free department handle %d holds %d assignments", dh, len(h.byDept[dh]))
		}
		freed[dh] = true
	}
	if unused := len(h.depts) - min(len(h.depts), 1) - depts; unused != len(freed) {
		bad("%d unused department handles, %d on the free list", unused, len(freed))
	}

	// check checks one of the two assignment indexes against the other.
	check := func(name string, sets, other []handleSet, users bool) int {
		n := 0
		for k, s := range sets {
			if s == nil {
				continue
			}
			if len(s) == 0 {
				bad("%s[%d]: empty set", name, k)
			}
			for v, at := range s {
				n++
				uh, dh := uint32(k), v
				if !users {
					uh, dh = v, uint32(k)
				}
				if int(uh) >= len(h.users) || h.users[uh] == nil {
					bad("%s: assignment of user handle %d to %d: user missing", name, uh, dh)
				}
				if int(dh) >= len(h.depts) || h.depts[dh] == nil {
					bad("%s: assignment of user handle %d to %d: department missing", name, uh, dh)
				}
				if int(v) >= len(other) {
					bad("%s: assignment of user handle %d to %d not mirrored", name, uh, dh)
				} else if oat, ok := other[v][uint32(k)]; !ok || oat != at {
					bad("%s: assignment of user handle %d to %d not mirrored in the other index", name, uh, dh)
				}
			}
		}
		return n
	}
	n := check("byUser", h.byUser, h.byDept, true)
	check("byDept", h.byDept, h.byUser, false)
	if n != r.assignments {
		bad("AssignmentCount says %d, the indexes hold %d", r.assignments, n)
	}
}
