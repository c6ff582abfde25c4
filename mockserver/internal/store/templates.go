package store

import (
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Property types of property templates.
const (
	PropString  = "STRING"
	PropNumber  = "NUMBER"
	PropBoolean = "BOOLEAN"
	PropDate    = "DATE"
	PropEnum    = "ENUM"
	PropEmail   = "EMAIL"
	PropURL     = "URL"
)

// MaxProperties is the largest number of properties in one template.
const MaxProperties = 100

// MaxTemplateNodes is the largest number of departments in one department
// template, and so the most departments one instantiation, or one
// CreateDepartment, can create.
const MaxTemplateNodes = 1000

// PropertyTemplateSpec is the caller-supplied part of a property template.
type PropertyTemplateSpec struct {
	Name        string
	Description string
	Properties  []Property
}

// check validates a property template spec on its own (keys unique within
// it, known types, ENUMs with allowed values) and returns it normalised.
func (s PropertyTemplateSpec) check() (PropertyTemplateSpec, error) {
	name, err := checkNamed(s.Name, s.Description)
	if err != nil {
		return s, err
	}
	s.Name = name
	if len(s.Properties) > MaxProperties {
		return s, invalidField("properties", fmt.Sprintf("must have at most %d properties", MaxProperties))
	}
	seen := map[string]bool{}
	props := make([]Property, len(s.Properties))
	for i, p := range s.Properties {
		field := fmt.Sprintf("properties[%d].", i)
		if p.Key == "" || utf8.RuneCountInString(p.Key) > MaxAttributeKey {
			return s, invalidField(field+"key", "must be 1 to 255 characters")
		}
		if seen[p.Key] {
			return s, invalidField(field+"key", fmt.Sprintf("duplicate key %q", p.Key))
		}
		seen[p.Key] = true
		if utf8.RuneCountInString(p.Label) > MaxNameLen {
			return s, invalidField(field+"label", "must be at most 255 characters")
		}
		switch p.Type {
		case PropString, PropNumber, PropBoolean, PropDate, PropEmail, PropURL:
		case PropEnum:
			if len(p.AllowedValues) == 0 {
				return s, invalidField(field+"allowedValues", "an ENUM property needs at least one allowed value")
			}
		default:
			return s, invalidField(field+"type", "must be one of STRING, NUMBER, BOOLEAN, DATE, ENUM, EMAIL, URL")
		}
		p.AllowedValues = slices.Clone(p.AllowedValues)
		props[i] = p
	}
	s.Properties = props
	return s, nil
}

// PropertyTemplate returns a property template of an organization, or
// ErrNotFound.
func (r *Realm) PropertyTemplate(orgID, id string) (*PropertyTemplate, error) {
	return inOrg(r, orgID, r.PropTmpls, id, "property template")
}

// PropertyTemplates returns an organization's property templates sorted by
// name then id.
func (r *Realm) PropertyTemplates(orgID string) ([]*PropertyTemplate, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	ids := r.orgIndex(orgID).propTmpls
	out := make([]*PropertyTemplate, 0, len(ids))
	for id := range ids {
		out = append(out, r.PropTmpls[id])
	}
	slices.SortFunc(out, func(a, b *PropertyTemplate) int { return byName(a.Name, a.ID, b.Name, b.ID) })
	return out, nil
}

// CreatePropertyTemplate adds a property template to an organization.
// Errors: ErrNotFound, a *FieldError, ErrConflict when a key is declared by
// another template of the organization.
func (r *Realm) CreatePropertyTemplate(orgID string, spec PropertyTemplateSpec, now time.Time) (*PropertyTemplate, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	spec, err := spec.check()
	if err != nil {
		return nil, err
	}
	if err := r.checkKeysFree(orgID, "", spec.Properties); err != nil {
		return nil, err
	}
	t := &PropertyTemplate{ID: r.newID("property template", string(named([]byte(orgID), spec.Name))), OrgID: orgID, Name: spec.Name, Description: spec.Description,
		Properties: spec.Properties, CreatedAt: now.UTC()}
	r.PropTmpls[t.ID] = t
	ix := r.orgIndex(orgID)
	ix.propTmpls[t.ID] = struct{}{}
	ix.addProps(t)
	return t, nil
}

// UpdatePropertyTemplate replaces a property template's name, description
// and properties. Departments made before keep their attributes; the new
// properties apply to later department creates and updates.
func (r *Realm) UpdatePropertyTemplate(orgID, id string, spec PropertyTemplateSpec) (*PropertyTemplate, error) {
	t, err := r.PropertyTemplate(orgID, id)
	if err != nil {
		return nil, err
	}
	if spec, err = spec.check(); err != nil {
		return nil, err
	}
	if err := r.checkKeysFree(orgID, id, spec.Properties); err != nil {
		return nil, err
	}
	ix := r.orgIndex(orgID)
	ix.removeProps(t)
	t.Name, t.Description, t.Properties = spec.Name, spec.Description, spec.Properties
	ix.addProps(t)
	return t, nil
}

// DeletePropertyTemplate removes a property template.
func (r *Realm) DeletePropertyTemplate(orgID, id string) error {
	t, err := r.PropertyTemplate(orgID, id)
	if err != nil {
		return err
	}
	delete(r.PropTmpls, id)
	ix := r.orgIndex(orgID)
	delete(ix.propTmpls, id)
	ix.removeProps(t)
	return nil
}

// checkKeysFree reports ErrConflict when another template of the
// organization than except declares one of the keys of props. It costs
// len(props) look-ups in the organization's index of keys.
func (r *Realm) checkKeysFree(orgID, except string, props []Property) error {
	ix := r.orgIndex(orgID)
	for _, q := range props {
		if ref, ok := ix.props[q.Key]; ok && ref.tmpl.ID != except {
			return Conflict("property key %q is already declared by template %q", q.Key, ref.tmpl.ID)
		}
	}
	return nil
}

// checkPropertyAttributes validates department attributes against the
// organization's property templates: every required key is present with a
// value, and every value of a declared key parses as its type (NUMBER a
// finite float, BOOLEAN true or false, DATE YYYY-MM-DD, EMAIL an address,
// URL absolute, ENUM one of the allowed values). Undeclared keys are free.
//
// It costs the attributes, not the organization's templates: each attribute
// is one look-up in the organization's index of keys, and the walk over the
// required keys stops at the first one missing, so it makes at most one
// look-up more than there are attributes. field names the attributes in an
// error; it is called only for one, so that a caller checking many
// departments builds no names for the valid ones.
func (r *Realm) checkPropertyAttributes(orgID string, field func() string, attrs Attributes) error {
	ix := r.orgIndex(orgID)
	for key := range ix.required {
		if len(attrs[key]) == 0 {
			return invalidField(field()+"."+key, "is required by property template "+ix.props[key].tmpl.Name)
		}
	}
	for key, values := range attrs {
		ref, ok := ix.props[key]
		if !ok {
			continue
		}
		for _, v := range values {
			if !validValue(*ref.prop, v) {
				return invalidField(field()+"."+key, fmt.Sprintf("%q is not a valid %s", v, ref.prop.Type))
			}
		}
	}
	return nil
}

// validValue reports whether v is a value of property p.
func validValue(p Property, v string) bool {
	switch p.Type {
	case PropNumber:
		f, err := strconv.ParseFloat(v, 64)
		return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case PropBoolean:
		return v == "true" || v == "false"
	case PropDate:
		_, err := time.Parse(time.DateOnly, v)
		return err == nil
	case PropEmail:
		a, err := mail.ParseAddress(v)
		return err == nil && a.Address == v
	case PropURL:
		u, err := url.Parse(v)
		return err == nil && u.IsAbs() && u.Host != ""
	case PropEnum:
		return slices.Contains(p.AllowedValues, v)
	default:
		return true
	}
}

// DeptTemplateSpec is the caller-supplied part of a department template.
type DeptTemplateSpec struct {
	Name        string
	Description string
	Root        TemplateNode
}

// DepartmentTemplate returns a department template of an organization, or
// ErrNotFound.
func (r *Realm) DepartmentTemplate(orgID, id string) (*DepartmentTemplate, error) {
	return inOrg(r, orgID, r.DeptTmpls, id, "department template")
}

// DepartmentTemplates returns an organization's department templates sorted
// by name then id.
func (r *Realm) DepartmentTemplates(orgID string) ([]*DepartmentTemplate, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	ids := r.orgIndex(orgID).deptTmpls
	out := make([]*DepartmentTemplate, 0, len(ids))
	for id := range ids {
		out = append(out, r.DeptTmpls[id])
	}
	slices.SortFunc(out, func(a, b *DepartmentTemplate) int { return byName(a.Name, a.ID, b.Name, b.ID) })
	return out, nil
}

// CreateDepartmentTemplate stores an immutable department template. Its tree
// is checked as departments are (names, aliases unique within the template,
// attributes, depth at most 32) and may hold at most MaxTemplateNodes
// departments; property templates are checked when it is instantiated.
// Errors: ErrNotFound (organization, a role), a *FieldError.
func (r *Realm) CreateDepartmentTemplate(orgID string, spec DeptTemplateSpec, now time.Time) (*DepartmentTemplate, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	name, err := checkNamed(spec.Name, spec.Description)
	if err != nil {
		return nil, err
	}
	aliases := map[string]bool{}
	var roles []string
	nodes := 0
	var clean func(n TemplateNode, field string, depth int) (TemplateNode, error)
	clean = func(n TemplateNode, field string, depth int) (TemplateNode, error) {
		if nodes++; nodes > MaxTemplateNodes {
			return n, invalidField("root", fmt.Sprintf("a department template has at most %d departments", MaxTemplateNodes))
		}
		if depth > MaxDepartmentDepth {
			return n, Invalid("department templates can be nested at most %d levels deep", MaxDepartmentDepth)
		}
		nm, err := CheckName(field+"name", n.Name)
		if err != nil {
			return n, err
		}
		n.Name = nm
		if n.Alias != "" {
			if err := CheckAlias(field+"alias", n.Alias); err != nil {
				return n, err
			}
			if aliases[n.Alias] {
				return n, invalidField(field+"alias", fmt.Sprintf("alias %q is used twice in the template", n.Alias))
			}
			aliases[n.Alias] = true
		}
		if err := CheckAttributes(field+"attributes", n.Attributes); err != nil {
			return n, err
		}
		n.Attributes = n.Attributes.Clone()
		n.RoleIDs = slices.Clone(n.RoleIDs)
		roles = append(roles, n.RoleIDs...)
		kids := make([]TemplateNode, len(n.Children))
		for i, c := range n.Children {
			if kids[i], err = clean(c, fmt.Sprintf("%schildren[%d].", field, i), depth+1); err != nil {
				return n, err
			}
		}
		n.Children = kids
		return n, nil
	}
	root, err := clean(spec.Root, "root.", 1)
	if err != nil {
		return nil, err
	}
	for _, id := range roles {
		if _, ok := r.Roles[id]; !ok {
			return nil, NotFound("role %q", id)
		}
	}
	t := &DepartmentTemplate{ID: r.newID("department template", string(named([]byte(orgID), name))), OrgID: orgID, Name: name, Description: spec.Description,
		Root: root, CreatedAt: now.UTC()}
	r.DeptTmpls[t.ID] = t
	r.orgIndex(orgID).deptTmpls[t.ID] = struct{}{}
	return t, nil
}

// InstantiateTemplate creates the department subtree of template tmplID
// under parentID ("" for a root department), atomically: an alias clash
// (ErrConflict), a property-template violation or the depth limit
// (ErrInvalid) creates nothing. Each department records its node's roleIds
// as TemplateRoleIDs. It returns the top department.
//
// The template's nodes were checked when it was stored and never change, so
// they are not checked or copied again: only what depends on where they go
// is (depth, aliases in use, property templates), and the departments share
// the template's attribute maps and role lists, which nothing changes in
// place (an update replaces a department's attributes). Instantiating costs
// the template's size and allocates little beyond the departments.
func (r *Realm) InstantiateTemplate(orgID, parentID, tmplID string, now time.Time) (*Department, error) {
	t, err := r.DepartmentTemplate(orgID, tmplID)
	if err != nil {
		return nil, err
	}
	parentID, depth, err := r.parent(orgID, parentID)
	if err != nil {
		return nil, err
	}
	ix := r.orgIndex(orgID)
	// path holds the child indexes from the template's root down to the node
	// being checked. The node's field name ("root.children[3].attributes")
	// is built from it only for an error: building it for every node was
	// two allocations per department of every instantiation.
	path := make([]int, 0, MaxDepartmentDepth)
	attrsField := func() string {
		b := []byte("root.")
		for _, i := range path {
			b = fmt.Appendf(b, "children[%d].", i)
		}
		return string(append(b, "attributes"...))
	}
	var fits func(n *TemplateNode, depth int) error
	fits = func(n *TemplateNode, depth int) error {
		if depth > MaxDepartmentDepth {
			return Invalid("departments can be nested at most %d levels deep", MaxDepartmentDepth)
		}
		if err := r.checkPropertyAttributes(orgID, attrsField, n.Attributes); err != nil {
			return err
		}
		if n.Alias != "" {
			if _, taken := ix.aliases[n.Alias]; taken {
				return Conflict("department alias %q already exists in organization %q", n.Alias, orgID)
			}
		}
		for _, id := range n.RoleIDs {
			if _, ok := r.Roles[id]; !ok {
				return NotFound("role %q", id)
			}
		}
		for i := range n.Children {
			path = append(path, i)
			if err := fits(&n.Children[i], depth+1); err != nil {
				return err
			}
			path = path[:len(path)-1]
		}
		return nil
	}
	if err := fits(&t.Root, depth+1); err != nil {
		return nil, err
	}

	// Nothing can fail from here on.
	var create func(n *TemplateNode, parentID string, depth int) *Department
	create = func(n *TemplateNode, parentID string, depth int) *Department {
		d := &Department{ID: r.newID("department", deptName(orgID, parentID, n.Name, n.Alias)), OrgID: orgID, ParentID: parentID, Name: n.Name, Alias: n.Alias,
			Attributes: n.Attributes, TemplateRoleIDs: n.RoleIDs, Depth: int32(depth), CreatedAt: now.UTC()}
		r.addDept(d)
		ix.link(d)
		for i := range n.Children {
			create(&n.Children[i], d.ID, depth+1)
		}
		return d
	}
	return create(&t.Root, parentID, depth+1), nil
}
