package store

import (
	"slices"
	"strings"
)

// RoleSpec is the caller-supplied part of a realm role made through an
// organization.
type RoleSpec struct {
	Name        string
	Description string
	Attributes  Attributes
}

// LinkRole links an existing realm role to an organization. Linking a role
// already linked changes nothing and returns created false. Errors:
// ErrNotFound for an unknown organization or role.
func (r *Realm) LinkRole(orgID, roleID string) (created bool, err error) {
	if _, err := r.Organization(orgID); err != nil {
		return false, err
	}
	if _, ok := r.Roles[roleID]; !ok {
		return false, NotFound("role %q", roleID)
	}
	if _, ok := r.OrgRoles[orgID][roleID]; ok {
		return false, nil
	}
	indexAdd(r.OrgRoles, orgID, roleID)
	return true, nil
}

// OrgRole returns a role linked to an organization. Errors: ErrNotFound for
// an unknown organization or a role not linked to it.
func (r *Realm) OrgRole(orgID, roleID string) (*Role, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	if _, ok := r.OrgRoles[orgID][roleID]; !ok {
		return nil, NotFound("role %q is not linked to organization %q", roleID, orgID)
	}
	return r.Roles[roleID], nil
}

// UnlinkRole removes a role from an organization; the realm role stays.
// Errors: ErrNotFound for an unknown organization or a role not linked.
func (r *Realm) UnlinkRole(orgID, roleID string) error {
	if _, err := r.Organization(orgID); err != nil {
		return err
	}
	if _, ok := r.OrgRoles[orgID][roleID]; !ok {
		return NotFound("role %q is not linked to organization %q", roleID, orgID)
	}
	indexRemove(r.OrgRoles, orgID, roleID)
	return nil
}

// CreateOrgRole creates a realm role and links it to the organization.
// Errors: ErrNotFound (organization), a *FieldError, ErrConflict when a realm
// role of that name exists.
func (r *Realm) CreateOrgRole(orgID string, spec RoleSpec) (*Role, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	name, err := CheckName("name", spec.Name)
	if err != nil {
		return nil, err
	}
	if isIDForm(name) {
		return nil, invalidField("name", "must not have the form of an id (a UUID): readers take a role by its id or its name")
	}
	if err := CheckDescription("description", spec.Description); err != nil {
		return nil, err
	}
	if err := CheckAttributes("attributes", spec.Attributes); err != nil {
		return nil, err
	}
	if _, taken := r.RoleByName[name]; taken {
		return nil, Conflict("role %q already exists", name)
	}
	role := &Role{ID: r.newID("role", name), Name: name, Description: spec.Description, Attributes: spec.Attributes.Clone()}
	r.addRole(role)
	indexAdd(r.OrgRoles, orgID, role.ID)
	return role, nil
}

// OrgRoleList returns the roles linked to an organization, plus every global
// role when withGlobal is set, sorted by name then id. It costs the roles
// it returns.
func (r *Realm) OrgRoleList(orgID string, withGlobal bool) ([]*Role, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	linked := r.OrgRoles[orgID]
	out := make([]*Role, 0, len(linked))
	for id := range linked {
		out = append(out, r.Roles[id])
	}
	if withGlobal {
		for id := range r.globalRoles {
			if _, ok := linked[id]; !ok {
				out = append(out, r.Roles[id])
			}
		}
	}
	slices.SortFunc(out, cmpRole)
	return out, nil
}

// AvailableRoles returns the realm roles not linked to an organization and
// not global; with includeGlobal, the unlinked global roles too.
func (r *Realm) AvailableRoles(orgID string, includeGlobal bool) ([]*Role, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	linked := r.OrgRoles[orgID]
	return r.filterRoles(func(role *Role) bool {
		_, ok := linked[role.ID]
		return !ok && (includeGlobal || !role.IsGlobal())
	}), nil
}

// RealmRoles returns every realm role whose name contains search
// (case-insensitive; empty matches all), sorted by name then id. Without a
// search the list is the realm's index: it costs nothing to get and must not
// be changed.
func (r *Realm) RealmRoles(search string) []*Role {
	if search == "" {
		return r.roleList
	}
	search = strings.ToLower(search)
	return r.filterRoles(func(role *Role) bool {
		return strings.Contains(strings.ToLower(role.Name), search)
	})
}

// filterRoles returns the realm's roles that keep accepts, in list order.
func (r *Realm) filterRoles(keep func(*Role) bool) []*Role {
	out := []*Role{}
	for _, role := range r.roleList {
		if keep(role) {
			out = append(out, role)
		}
	}
	return out
}

// LinkGroup links a realm group to an organization. A group belongs to at
// most one organization. Linking it again to the same organization changes
// nothing and returns created false. Errors: ErrNotFound (organization,
// group), ErrConflict when the group is linked to another organization.
func (r *Realm) LinkGroup(orgID, groupID string) (created bool, err error) {
	if _, err := r.Organization(orgID); err != nil {
		return false, err
	}
	if _, ok := r.Groups[groupID]; !ok {
		return false, NotFound("group %q", groupID)
	}
	if owner, ok := r.GroupOrg[groupID]; ok {
		if owner == orgID {
			return false, nil
		}
		return false, Conflict("group %q is linked to another organization", groupID)
	}
	indexAdd(r.OrgGroups, orgID, groupID)
	r.GroupOrg[groupID] = orgID
	return true, nil
}

// UnlinkGroup removes a group from an organization; the realm group stays.
// Errors: ErrNotFound for an unknown organization or a group not linked.
func (r *Realm) UnlinkGroup(orgID, groupID string) error {
	if _, err := r.Organization(orgID); err != nil {
		return err
	}
	if _, ok := r.OrgGroups[orgID][groupID]; !ok {
		return NotFound("group %q is not linked to organization %q", groupID, orgID)
	}
	indexRemove(r.OrgGroups, orgID, groupID)
	delete(r.GroupOrg, groupID)
	return nil
}

// OrgGroupList returns the groups linked to an organization, sorted by name
// then id.
func (r *Realm) OrgGroupList(orgID string) ([]*Group, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	out := make([]*Group, 0, len(r.OrgGroups[orgID]))
	for gid := range r.OrgGroups[orgID] {
		if g, ok := r.Groups[gid]; ok {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *Group) int { return byName(a.Name, a.ID, b.Name, b.ID) })
	return out, nil
}
