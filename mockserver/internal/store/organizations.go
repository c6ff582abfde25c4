package store

// The organization hierarchy of a realm: organizations (this file),
// departments, assignments, role/group links, applications and templates.
// Every operation is a method on *Realm, runs inside Store.Read or
// Store.Write, checks everything before its first change, and keeps every
// index of the realm consistent (CheckInvariants states them).
//
// Seeding a realm (the fixture loader), all inside one Store.Write:
//
//	org, err := rm.CreateOrganization(OrgSpec{Name: "Acme EU", Alias: "acme-eu"}, now)
//	dept, err := rm.CreateDepartment(org.ID, "", DeptSpec{Name: "Sales", Alias: "sales",
//		Children: []DeptSpec{{Name: "Inside Sales", Alias: "inside-sales"}}}, now)
//	_, _, err = rm.Assign(userID, dept.ID, now)           // a user into a department
//	_, err = rm.LinkRole(org.ID, roleID)                  // an existing realm role
//	app, err := rm.RegisterApplication(AppSpec{ClientID: "orders-api"}, now)
//	_, _, err = rm.AssignApplication(org.ID, app.ClientID) // by clientId
//	_, err = rm.LinkGroup(org.ID, groupID)
//
// Lookups for decisions: UserOrganizations (the organization context) and
// AddOrgRoles (the roles a user holds through assignments, which the
// decision engine adds to a subject's set; UserOrgRoleIDs returns them as a
// new set).
//
// Pointers returned by these methods point into the state: they are valid
// only inside the Read or Write call and must not be changed by callers.

import (
	"cmp"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the organization API.
const (
	MaxNameLen         = 255
	MaxDescriptionLen  = 2048
	MaxAttributeKeys   = 100
	MaxAttributeKey    = 255
	MaxDepartmentDepth = 32
)

// aliasPattern is the form of organization and department aliases.
var aliasPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// FieldError is an ErrInvalid that names the input field at fault, so that
// an HTTP layer can report it in the details of a 400.
type FieldError struct {
	Field   string
	Message string
}

// Error returns "invalid: <field>: <message>".
func (e *FieldError) Error() string { return "invalid: " + e.Field + ": " + e.Message }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// invalidField returns a *FieldError.
func invalidField(field, message string) error {
	return &FieldError{Field: field, Message: message}
}

// CheckName validates a name (1 to 255 characters after trimming) and returns
// it trimmed.
func CheckName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", invalidField(field, "is required")
	}
	if utf8.RuneCountInString(name) > MaxNameLen {
		return "", invalidField(field, "must be at most 255 characters")
	}
	return name, nil
}

// CheckAlias validates an alias against ^[a-z0-9][a-z0-9_-]{0,62}$, and
// refuses one in the form of an id (a UUID, which the pattern admits): a
// token's organization claim names an organization by its id or its
// alias, so no alias may be read as an id (an alias set to another
// organization's id would make a token limited to one count the other's
// assignments).
func CheckAlias(field, alias string) error {
	if !aliasPattern.MatchString(alias) {
		return invalidField(field, "must match ^[a-z0-9][a-z0-9_-]{0,62}$")
	}
	if isIDForm(alias) {
		return invalidField(field, "must not have the form of an id (a UUID): an organization claim reads it as one")
	}
	return nil
}

// isIDForm reports whether s has the form of the ids the server assigns:
// 8-4-4-4-12 hexadecimal digits, whatever their version bits.
func isIDForm(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}

// checkNamed checks the name and the description of a spec: the name
// trimmed (CheckName), or the first error.
func checkNamed(name, description string) (string, error) {
	name, err := CheckName("name", name)
	if err != nil {
		return "", err
	}
	return name, CheckDescription("description", description)
}

// CheckDescription validates a description (at most 2048 characters).
func CheckDescription(field, d string) error {
	if utf8.RuneCountInString(d) > MaxDescriptionLen {
		return invalidField(field, "must be at most 2048 characters")
	}
	return nil
}

// CheckAttributes validates an attribute map: at most 100 keys, each key 1
// to 255 characters.
func CheckAttributes(field string, a Attributes) error {
	if len(a) > MaxAttributeKeys {
		return invalidField(field, "must have at most 100 keys")
	}
	for k := range a {
		if k == "" || utf8.RuneCountInString(k) > MaxAttributeKey {
			return invalidField(field, "keys must be 1 to 255 characters")
		}
	}
	return nil
}

// OrgSpec is the caller-supplied part of an organization.
type OrgSpec struct {
	Name        string
	Alias       string // ignored by UpdateOrganization: aliases are immutable
	Description string
	Attributes  Attributes
}

// check validates the spec and returns it normalised (name trimmed,
// attributes cloned and never nil).
func (s OrgSpec) check(withAlias bool) (OrgSpec, error) {
	name, err := CheckName("name", s.Name)
	if err != nil {
		return s, err
	}
	s.Name = name
	if withAlias {
		if err := CheckAlias("alias", s.Alias); err != nil {
			return s, err
		}
	}
	if err := CheckDescription("description", s.Description); err != nil {
		return s, err
	}
	if err := CheckAttributes("attributes", s.Attributes); err != nil {
		return s, err
	}
	s.Attributes = s.Attributes.Clone()
	return s, nil
}

// Organization returns the organization with the given id, or ErrNotFound.
func (r *Realm) Organization(id string) (*Organization, error) {
	return find(r.Orgs, id, "organization %q", id)
}

// OrganizationByAlias returns the organization with the given alias, or
// ErrNotFound.
func (r *Realm) OrganizationByAlias(alias string) (*Organization, error) {
	id, err := find(r.OrgByAlias, alias, "organization with alias %q", alias)
	if err != nil {
		return nil, err
	}
	return r.Organization(id)
}

// Organizations returns the realm's organizations whose name or alias
// contains search (case-insensitive; empty matches all), sorted by name then
// id. Without a search the list is the realm's index: it costs nothing to
// get and must not be changed; a search costs one pass over the
// organizations.
func (r *Realm) Organizations(search string) []*Organization {
	if search == "" {
		return r.orgList
	}
	search = strings.ToLower(search)
	out := []*Organization{}
	for _, o := range r.orgList {
		if strings.Contains(strings.ToLower(o.Name), search) || strings.Contains(o.Alias, search) {
			out = append(out, o)
		}
	}
	return out
}

// CreateOrganization creates an organization. Errors: a *FieldError
// (ErrInvalid) for a bad field, ErrConflict when the alias is taken in the
// realm.
func (r *Realm) CreateOrganization(spec OrgSpec, now time.Time) (*Organization, error) {
	spec, err := spec.check(true)
	if err != nil {
		return nil, err
	}
	if _, taken := r.OrgByAlias[spec.Alias]; taken {
		return nil, Conflict("organization alias %q already exists", spec.Alias)
	}
	o := &Organization{
		ID:          r.newID("organization", spec.Alias),
		Name:        spec.Name,
		Alias:       spec.Alias,
		Description: spec.Description,
		Attributes:  spec.Attributes,
		CreatedAt:   now.UTC(),
	}
	r.Orgs[o.ID] = o
	r.OrgByAlias[o.Alias] = o.ID
	r.orgs[o.ID] = newOrgIndex()
	r.orgList = insertSorted(r.orgList, o, cmpOrg)
	return o, nil
}

// UpdateOrganization replaces the mutable fields (name, description,
// attributes) of an organization; spec.Alias is ignored. Errors: ErrNotFound,
// a *FieldError.
func (r *Realm) UpdateOrganization(id string, spec OrgSpec) (*Organization, error) {
	o, err := r.Organization(id)
	if err != nil {
		return nil, err
	}
	spec, err = spec.check(false)
	if err != nil {
		return nil, err
	}
	if spec.Name != o.Name {
		r.orgList = removeSorted(r.orgList, o, cmpOrg)
		o.Name = spec.Name
		r.orgList = insertSorted(r.orgList, o, cmpOrg)
	}
	o.Description, o.Attributes = spec.Description, spec.Attributes
	return o, nil
}

// DeleteOrganization removes an organization with everything that hangs on
// it: its departments and their assignments (and so the template grants
// anchored to them), its role, group and application links, and its property
// and department templates. Realm roles, groups, clients and users stay. It
// costs the size of the organization, never of the realm.
func (r *Realm) DeleteOrganization(id string) error {
	o, err := r.Organization(id)
	if err != nil {
		return err
	}
	ix := r.orgIndex(id)
	// The index goes whole below: each department only leaves Depts and
	// takes its assignments with it, with no sibling list to search or
	// shift (removing the roots one by one from their list was quadratic
	// in their number).
	for root := range ix.children[id].All() {
		for _, d := range r.subtree(root.ID) {
			r.forget(d)
		}
	}
	for gid := range r.OrgGroups[id] {
		delete(r.GroupOrg, gid)
	}
	delete(r.OrgGroups, id)
	delete(r.OrgRoles, id)
	for aid := range r.OrgApps[id] {
		indexRemove(r.AppOrgs, aid, id)
	}
	delete(r.OrgApps, id)
	for tid := range ix.propTmpls {
		delete(r.PropTmpls, tid)
	}
	for tid := range ix.deptTmpls {
		delete(r.DeptTmpls, tid)
	}
	delete(r.orgs, id)
	r.orgList = removeSorted(r.orgList, o, cmpOrg)
	delete(r.OrgByAlias, o.Alias)
	delete(r.Orgs, id)
	return nil
}

// byName orders by name (case-insensitive, then exact), then id.
func byName(nameA, idA, nameB, idB string) int {
	if c := compareLower(nameA, nameB); c != 0 {
		return c
	}
	if c := cmp.Compare(nameA, nameB); c != 0 {
		return c
	}
	return cmp.Compare(idA, idB)
}

// nextLower returns the first rune of s, which is not empty, lower-cased
// (unicode.ToLower), and the rest of s.
func nextLower(s string) (rune, string) {
	if c := s[0]; c < utf8.RuneSelf {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return rune(c), s[1:]
	}
	r, n := utf8.DecodeRuneInString(s)
	return unicode.ToLower(r), s[n:]
}

// compareLower compares strings.ToLower(a) with strings.ToLower(b) without
// building them: lists are sorted and searched with it on every change.
func compareLower(a, b string) int {
	for a != "" && b != "" {
		var ra, rb rune
		ra, a = nextLower(a)
		rb, b = nextLower(b)
		if ra != rb {
			return cmp.Compare(ra, rb)
		}
	}
	return cmp.Compare(len(a), len(b))
}
