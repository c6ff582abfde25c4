package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Application statuses.
const (
	AppActive   = "ACTIVE"
	AppDisabled = "DISABLED"
)

// Application sort keys.
const (
	SortByName      = "name"
	SortByClientID  = "clientId"
	SortByCreatedAt = "createdAt"
)

// AppSpec is the caller-supplied part of a catalog application.
type AppSpec struct {
	ClientID    string // the realm client; ignored by UpdateApplication
	Name        string // "" means the clientId
	Description string
	Tags        []string
	Status      string // ACTIVE or DISABLED; "" means ACTIVE
	Assignable  *bool  // nil means true
}

// check validates the spec and returns it normalised.
func (s AppSpec) check() (AppSpec, error) {
	if s.Name == "" {
		s.Name = s.ClientID
	}
	name, err := checkNamed(s.Name, s.Description)
	if err != nil {
		return s, err
	}
	s.Name = name
	if len(s.Tags) > MaxAttributeKeys {
		return s, invalidField("tags", "must have at most 100 tags")
	}
	for _, t := range s.Tags {
		if t == "" || utf8.RuneCountInString(t) > MaxNameLen {
			return s, invalidField("tags", "tags must be 1 to 255 characters")
		}
	}
	s.Tags = append([]string{}, s.Tags...)
	switch s.Status {
	case "":
		s.Status = AppActive
	case AppActive, AppDisabled:
	default:
		return s, invalidField("status", "must be ACTIVE or DISABLED")
	}
	if s.Assignable == nil {
		t := true
		s.Assignable = &t
	}
	return s, nil
}

// RegisterApplication adds an existing realm client to the application
// catalog. Errors: a *FieldError, ErrNotFound for an unknown client,
// ErrConflict when it is already in the catalog.
func (r *Realm) RegisterApplication(spec AppSpec, now time.Time) (*Application, error) {
	if spec.ClientID == "" {
		return nil, invalidField("clientId", "is required")
	}
	spec, err := spec.check()
	if err != nil {
		return nil, err
	}
	if _, ok := r.ClientByID[spec.ClientID]; !ok {
		return nil, NotFound("client %q", spec.ClientID)
	}
	if _, ok := r.AppByID[spec.ClientID]; ok {
		return nil, Conflict("client %q is already in the application catalog", spec.ClientID)
	}
	app := &Application{
		ID:          r.newID("application", spec.ClientID),
		ClientID:    spec.ClientID,
		Name:        spec.Name,
		Description: spec.Description,
		Tags:        spec.Tags,
		Status:      spec.Status,
		Assignable:  *spec.Assignable,
		CreatedAt:   now.UTC(),
	}
	r.Apps[app.ID] = app
	r.AppByID[app.ClientID] = app.ID
	return app, nil
}

// Application returns the catalog application with the given id, or
// ErrNotFound.
func (r *Realm) Application(appID string) (*Application, error) {
	return find(r.Apps, appID, "application %q", appID)
}

// ApplicationByClientID returns the catalog application of a clientId, or
// ErrNotFound.
func (r *Realm) ApplicationByClientID(clientID string) (*Application, error) {
	id, err := find(r.AppByID, clientID, "application %q is not in the catalog", clientID)
	if err != nil {
		return nil, err
	}
	return r.Application(id)
}

// UpdateApplication replaces the mutable fields of a catalog application
// (everything but id, clientId and createdAt). Omitted fields take their
// defaults.
func (r *Realm) UpdateApplication(appID string, spec AppSpec) (*Application, error) {
	a, err := r.Application(appID)
	if err != nil {
		return nil, err
	}
	spec.ClientID = a.ClientID
	if spec, err = spec.check(); err != nil {
		return nil, err
	}
	a.Name, a.Description, a.Tags, a.Status, a.Assignable =
		spec.Name, spec.Description, spec.Tags, spec.Status, *spec.Assignable
	return a, nil
}

// DeleteApplication removes an application from the catalog and from every
// organization it is assigned to; the realm client stays.
func (r *Realm) DeleteApplication(appID string) error {
	a, err := r.Application(appID)
	if err != nil {
		return err
	}
	for orgID := range r.AppOrgs[appID] {
		indexRemove(r.OrgApps, orgID, appID)
	}
	delete(r.AppOrgs, appID)
	delete(r.AppByID, a.ClientID)
	delete(r.Apps, appID)
	return nil
}

// AssignApplication assigns a catalog application, by clientId, to an
// organization. A repeat changes nothing and returns created false. Errors:
// ErrNotFound (organization, not in the catalog), ErrInvalid when the
// application is disabled or not assignable.
func (r *Realm) AssignApplication(orgID, clientID string) (*Application, bool, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, false, err
	}
	a, err := r.ApplicationByClientID(clientID)
	if err != nil {
		return nil, false, err
	}
	if _, ok := r.OrgApps[orgID][a.ID]; ok {
		return a, false, nil
	}
	if a.Status != AppActive {
		return nil, false, invalidField("clientId", "application "+clientID+" is disabled")
	}
	if !a.Assignable {
		return nil, false, invalidField("clientId", "application "+clientID+" is not assignable")
	}
	indexAdd(r.OrgApps, orgID, a.ID)
	indexAdd(r.AppOrgs, a.ID, orgID)
	return a, true, nil
}

// OrgApplication returns the application with the given clientId when it is
// assigned to the organization, else ErrNotFound.
func (r *Realm) OrgApplication(orgID, clientID string) (*Application, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	id, ok := r.AppByID[clientID]
	if _, assigned := r.OrgApps[orgID][id]; !ok || !assigned {
		return nil, NotFound("application %q is not assigned to organization %q", clientID, orgID)
	}
	return r.Apps[id], nil
}

// UnassignApplication removes an application from an organization; the
// catalog entry stays. Errors: ErrNotFound when it is not assigned.
func (r *Realm) UnassignApplication(orgID, clientID string) (*Application, error) {
	a, err := r.OrgApplication(orgID, clientID)
	if err != nil {
		return nil, err
	}
	indexRemove(r.OrgApps, orgID, a.ID)
	indexRemove(r.AppOrgs, a.ID, orgID)
	return a, nil
}

// AppQuery filters and orders application lists.
type AppQuery struct {
	Search string // case-insensitive substring of name, clientId or description
	Tag    string // exact tag
	SortBy string // name (default), clientId or createdAt
	Desc   bool
}

// CatalogApplications returns the realm's catalog filtered and sorted by q.
// Errors: a *FieldError for an unknown sortBy.
func (r *Realm) CatalogApplications(q AppQuery) ([]*Application, error) {
	return r.queryApps(q, func(*Application) bool { return true })
}

// OrgAppList returns the applications assigned to an organization, filtered
// and sorted by q.
func (r *Realm) OrgAppList(orgID string, q AppQuery) ([]*Application, error) {
	if _, err := r.Organization(orgID); err != nil {
		return nil, err
	}
	assigned := r.OrgApps[orgID]
	return r.queryApps(q, func(a *Application) bool { _, ok := assigned[a.ID]; return ok })
}

func (r *Realm) queryApps(q AppQuery, in func(*Application) bool) ([]*Application, error) {
	var key func(a, b *Application) int
	switch q.SortBy {
	case "", SortByName:
		key = func(a, b *Application) int { return byName(a.Name, a.ID, b.Name, b.ID) }
	case SortByClientID:
		key = func(a, b *Application) int {
			return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.ID, b.ID))
		}
	case SortByCreatedAt:
		key = func(a, b *Application) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		}
	default:
		return nil, invalidField("sortBy", "must be name, clientId or createdAt")
	}
	search := strings.ToLower(q.Search)
	out := []*Application{}
	for _, a := range r.Apps {
		if !in(a) {
			continue
		}
		if q.Tag != "" && !slices.Contains(a.Tags, q.Tag) {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(a.Name), search) &&
			!strings.Contains(strings.ToLower(a.ClientID), search) &&
			!strings.Contains(strings.ToLower(a.Description), search) {
			continue
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Application) int {
		if q.Desc {
			return key(b, a)
		}
		return key(a, b)
	})
	return out, nil
}
