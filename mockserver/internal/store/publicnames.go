package store

import "slices"

// PublicName reports whether v is a live realm's name. A live realm is
// public (it answers its discovery document to anyone), so an error may
// repeat its name. A decommissioned realm answers nothing, every route of it
// the 404 of a realm that never was: its name is public no more, and an
// error that repeated it would tell anyone which names were once tenants
// (a-server14 F3). A public name is exactly what the server answers to
// anyone at that moment. A
// name within a realm (a user, a client, an alias) is public only to that
// realm's callers (Realm.PublicName), which the server's error writers,
// answering any caller, cannot tell apart: looking such names up in every
// realm told a caller of one tenant whether a name exists in another
// (mockserver's echo.go). It is for the reference server's error paths.
func (s *Store) PublicName(v string) bool {
	if v == "" {
		return false
	}
	r, ok := s.Lookup(v)
	return ok && !r.Decommissioned()
}

// PublicName reports whether v is a name r publishes: a username, a role's,
// group's, organization's, property or department template's name, a
// property template's key, a clientId (a client's or an application's), an
// organization's alias, a client's resource or scope name. The caller
// holds r's lock (Read, Write). Indexes answer the common names; a realm's
// clients and templates are walked. A department's alias is not looked up:
// each organization has its own index of them, and walking them all cost
// 125 µs a miss in a realm of 10,000 organizations, on every error an
// authenticated caller can provoke; an error describes one instead.
func (r *Realm) PublicName(v string) bool {
	if _, ok := r.UserByName[v]; ok {
		return true
	}
	if _, ok := r.RoleByName[v]; ok {
		return true
	}
	if _, ok := r.GroupByName[v]; ok {
		return true
	}
	if _, ok := r.ClientByID[v]; ok {
		return true
	}
	if _, ok := r.AppByID[v]; ok {
		return true
	}
	if _, ok := r.OrgByAlias[v]; ok {
		return true
	}
	if i, _ := slices.BinarySearchFunc(r.orgList, v, func(o *Organization, name string) int { return byName(o.Name, o.ID, name, "") }); i < len(r.orgList) && r.orgList[i].Name == v {
		return true
	}
	for _, c := range r.Clients {
		for _, res := range c.Resources {
			if res.Name == v || slices.Contains(res.Scopes, v) {
				return true
			}
		}
	}
	for _, t := range r.PropTmpls {
		if t.Name == v || slices.ContainsFunc(t.Properties, func(p Property) bool { return p.Key == v }) {
			return true
		}
	}
	for _, t := range r.DeptTmpls {
		if t.Name == v {
			return true
		}
	}
	return false
}

// TryHoldsID is HoldsID for a caller that does not hold r's lock: r is
// read only when its read lock is free at once (TryRLock), and a realm
// being written, or decommissioned, answers no -- an error then describes
// the value instead of repeating it. It takes no lock a caller may hold
// and waits for none. It asks nothing of a value that is not of an id's
// form. It is for the reference server's error paths: an id is repeated to
// the callers of the realm that holds it, never looked up in other realms
// (a-fix14d: a lookup in every realm told any caller whether some tenant
// holds an id, at a cost that grew with the number of tenants).
func (r *Realm) TryHoldsID(v string) bool {
	if !isIDForm(v) || !r.mu.TryRLock() {
		return false
	}
	defer r.mu.RUnlock()
	return !r.Decommissioned() && r.HoldsID(v)
}

// HoldsID reports whether v is the id of an object r holds: its tenant, a
// user, role, group, client, organization, department, application,
// property or department template (a-fix14 F2).
// The caller holds r's lock (Read, Write).
func (r *Realm) HoldsID(v string) bool {
	if r.Tenant != nil && r.Tenant.ID == v {
		return true
	}
	if _, ok := r.Users[v]; ok {
		return true
	}
	if _, ok := r.Roles[v]; ok {
		return true
	}
	if _, ok := r.Groups[v]; ok {
		return true
	}
	if _, ok := r.Clients[v]; ok {
		return true
	}
	if _, ok := r.Orgs[v]; ok {
		return true
	}
	if _, ok := r.Depts[v]; ok {
		return true
	}
	if _, ok := r.Apps[v]; ok {
		return true
	}
	if _, ok := r.PropTmpls[v]; ok {
		return true
	}
	_, ok := r.DeptTmpls[v]
	return ok
}
