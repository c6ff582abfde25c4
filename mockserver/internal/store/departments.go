package store

import (
	"fmt"
	"slices"
	"time"
)

// DeptSpec is the caller-supplied part of a department, with optional
// children created in the same call.
type DeptSpec struct {
	Name        string
	Alias       string // optional; unique within the organization when set
	Description string
	Attributes  Attributes
	// TemplateRoleIDs are realm role ids granted to users assigned to the
	// department (set when it is made from a department template).
	TemplateRoleIDs []string
	Children        []DeptSpec
}

// DeptNode is a department with its children, sorted by name then id.
type DeptNode struct {
	Dept     *Department
	Children []*DeptNode
}

// Department returns the department deptID of organization orgID, at any
// depth. A department of another organization is ErrNotFound, as is an
// unknown organization and the organization's own id.
func (r *Realm) Department(orgID, deptID string) (*Department, error) {
	return inOrg(r, orgID, r.Depts, deptID, "department")
}

// SubDepartment returns subID when it is a direct child of department
// parentID in organization orgID; otherwise ErrNotFound.
func (r *Realm) SubDepartment(orgID, parentID, subID string) (*Department, error) {
	if _, err := r.Department(orgID, parentID); err != nil {
		return nil, err
	}
	d, err := r.Department(orgID, subID)
	if err != nil || d.ParentID != parentID {
		return nil, NotFound("sub-department %q of department %q", subID, parentID)
	}
	return d, nil
}

// Departments returns the direct children of parentID in organization orgID,
// sorted by name then id; parentID "" lists the root departments. Any other
// parentID must be a department of the organization (the organization's own
// id is not). Errors: ErrNotFound for an unknown organization or parent. The
// list is the organization's index: it costs nothing to get, a page of it
// costs the page (SortedList.Window), and it must be read under the realm's
// lock.
func (r *Realm) Departments(orgID, parentID string) (*SortedList[*Department], error) {
	parentID, _, err := r.parent(orgID, parentID)
	if err != nil {
		return nil, err
	}
	return r.orgIndex(orgID).children[parentID], nil
}

// parent resolves where departments of organization orgID hang: parentID
// "" is the organization itself, at depth 0; any other id must be a
// department of it, at its depth. It returns the parent's id (the
// organization's id for ""). Errors: ErrNotFound for an unknown
// organization or department.
func (r *Realm) parent(orgID, parentID string) (id string, depth int, err error) {
	if parentID == "" {
		_, err := r.Organization(orgID)
		return orgID, 0, err
	}
	p, err := r.Department(orgID, parentID)
	if err != nil {
		return "", 0, err
	}
	return parentID, int(p.Depth), nil
}

// DepartmentTree returns the organization's root departments with their
// subtrees. It costs the size of the organization's tree.
func (r *Realm) DepartmentTree(orgID string) ([]*DeptNode, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	children := r.orgIndex(orgID).children
	var build func(parent string) []*DeptNode
	build = func(parent string) []*DeptNode {
		out := make([]*DeptNode, 0, children[parent].Len())
		for d := range children[parent].All() {
			out = append(out, &DeptNode{Dept: d, Children: build(d.ID)})
		}
		return out
	}
	return build(orgID), nil
}

// subtree returns deptID and all its descendants, parents before children.
func (r *Realm) subtree(deptID string) []*Department {
	d := r.Depts[deptID]
	children := r.orgIndex(d.OrgID).children
	// Sized for the department and its children: all of a wide subtree,
	// such as a template's, in one allocation.
	out := make([]*Department, 1, 1+children[deptID].Len())
	out[0] = d
	for i := 0; i < len(out); i++ {
		for c := range children[out[i].ID].All() {
			out = append(out, c)
		}
	}
	return out
}

func sortDepts(ds []*Department) { slices.SortFunc(ds, cmpDept) }

// CreateDepartment creates spec, with its children, under parentID in
// organization orgID; parentID "" makes a root department. The whole subtree
// is created or nothing is. Errors, in this order: ErrNotFound (organization
// or parent), a *FieldError or ErrInvalid (a field, the organization's
// property templates, the depth limit of 32, more than MaxTemplateNodes
// departments), ErrNotFound for an unknown template role, ErrConflict for an
// alias already used in the organization or twice in spec. It returns the
// top department. It costs the size of spec, plus the sibling lists it
// inserts into; it never visits the rest of the realm.
func (r *Realm) CreateDepartment(orgID, parentID string, spec DeptSpec, now time.Time) (*Department, error) {
	parentID, depth, err := r.parent(orgID, parentID)
	if err != nil {
		return nil, err
	}

	// Validate every node before changing anything.
	var (
		clean   func(s DeptSpec, field string, depth int) (DeptSpec, error)
		aliases = map[string]bool{}
		roles   []string
		nodes   int
	)
	clean = func(s DeptSpec, field string, depth int) (DeptSpec, error) {
		if nodes++; nodes > MaxTemplateNodes {
			return s, Invalid("at most %d departments can be created at once", MaxTemplateNodes)
		}
		if depth > MaxDepartmentDepth {
			return s, Invalid("departments can be nested at most %d levels deep", MaxDepartmentDepth)
		}
		name, err := CheckName(field+"name", s.Name)
		if err != nil {
			return s, err
		}
		s.Name = name
		if s.Alias != "" {
			if err := CheckAlias(field+"alias", s.Alias); err != nil {
				return s, err
			}
		}
		if err := CheckDescription(field+"description", s.Description); err != nil {
			return s, err
		}
		if err := CheckAttributes(field+"attributes", s.Attributes); err != nil {
			return s, err
		}
		if err := r.checkPropertyAttributes(orgID, func() string { return field + "attributes" }, s.Attributes); err != nil {
			return s, err
		}
		s.Attributes = s.Attributes.Clone()
		s.TemplateRoleIDs = slices.Clone(s.TemplateRoleIDs)
		roles = append(roles, s.TemplateRoleIDs...)
		kids := make([]DeptSpec, len(s.Children))
		for i, c := range s.Children {
			if kids[i], err = clean(c, fmt.Sprintf("%schildren[%d].", field, i), depth+1); err != nil {
				return s, err
			}
		}
		s.Children = kids
		return s, nil
	}
	if spec, err = clean(spec, "", depth+1); err != nil {
		return nil, err
	}
	for _, id := range roles {
		if _, ok := r.Roles[id]; !ok {
			return nil, NotFound("role %q", id)
		}
	}
	ix := r.orgIndex(orgID)
	var clash func(s DeptSpec) error
	clash = func(s DeptSpec) error {
		if s.Alias != "" {
			if _, taken := ix.aliases[s.Alias]; taken || aliases[s.Alias] {
				return Conflict("department alias %q already exists in organization %q", s.Alias, orgID)
			}
			aliases[s.Alias] = true
		}
		for _, c := range s.Children {
			if err := clash(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := clash(spec); err != nil {
		return nil, err
	}

	// Nothing can fail from here on.
	var create func(s DeptSpec, parentID string, depth int) *Department
	create = func(s DeptSpec, parentID string, depth int) *Department {
		d := &Department{
			ID:              r.newID("department", deptName(orgID, parentID, s.Name, s.Alias)),
			OrgID:           orgID,
			ParentID:        parentID,
			Name:            s.Name,
			Alias:           s.Alias,
			Description:     s.Description,
			Attributes:      s.Attributes,
			TemplateRoleIDs: s.TemplateRoleIDs,
			Depth:           int32(depth),
			CreatedAt:       now.UTC(),
		}
		r.addDept(d)
		ix.link(d)
		for _, c := range s.Children {
			create(c, d.ID, depth+1)
		}
		return d
	}
	return create(spec, parentID, depth+1), nil
}

// UpdateDepartment replaces the mutable fields (name, description,
// attributes) of a department; the alias, parent and template roles stay.
// Attributes are checked against the organization's property templates.
func (r *Realm) UpdateDepartment(orgID, deptID string, spec DeptSpec) (*Department, error) {
	d, err := r.Department(orgID, deptID)
	if err != nil {
		return nil, err
	}
	name, err := checkNamed(spec.Name, spec.Description)
	if err != nil {
		return nil, err
	}
	if err := CheckAttributes("attributes", spec.Attributes); err != nil {
		return nil, err
	}
	if err := r.checkPropertyAttributes(orgID, func() string { return "attributes" }, spec.Attributes); err != nil {
		return nil, err
	}
	if name != d.Name {
		r.orgIndex(orgID).rename(d, name)
	}
	d.Description, d.Attributes = spec.Description, spec.Attributes.Clone()
	return d, nil
}

// DeleteDepartment removes a department, its whole subtree and every
// assignment to them (so the template grants anchored to those assignments
// go too). It returns the departments removed, the department first, parents
// before children. It costs the size of the subtree and of its assignments.
func (r *Realm) DeleteDepartment(orgID, deptID string) ([]*Department, error) {
	if _, err := r.Department(orgID, deptID); err != nil {
		return nil, err
	}
	return r.removeSubtree(deptID), nil
}

// removeSubtree removes department deptID with all its descendants, their
// assignments and their places in the organization's index, and returns
// them, parents before children. Only the top department is taken out of a
// sibling list (its parent's); the child lists below it are dropped whole.
// So it costs the size of the subtree and of its assignments, however wide
// the subtree, and never the top department's siblings beyond a logarithm.
func (r *Realm) removeSubtree(deptID string) []*Department {
	sub := r.subtree(deptID)
	ix := r.orgIndex(sub[0].OrgID)
	ix.unlink(sub[0])
	for _, d := range sub[1:] {
		ix.drop(d)
	}
	for _, d := range sub {
		r.forget(d)
	}
	return sub
}

// forget removes a department from Depts with its assignments (and so the
// template grants anchored to them); its place in the organization's index
// is the caller's to remove.
func (r *Realm) forget(d *Department) {
	for uh := range r.holdersOf(d) {
		r.removeAssignment(uh, d.h)
	}
	r.removeDept(d)
}
