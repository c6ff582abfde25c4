package mockserver

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/internal/store"
)

// organizationRoutes registers the organization API of spec sections 4.1 to
// 4.8 on the muxes of the organization subtree. Every route needs realm
// management; every mutating route names its audit action.
func (s *Server) organizationRoutes(m orgMuxes) {
	m.root.Handle("GET "+orgPrefix, s.realmAdmin("", s.listOrganizations))
	m.root.Handle("GET "+orgPrefix+"/{$}", s.realmAdmin("", s.listOrganizations))
	m.root.Handle("POST "+orgPrefix, s.realmAdmin("organization.create", s.createOrganization))
	m.root.Handle("POST "+orgPrefix+"/{$}", s.realmAdmin("organization.create", s.createOrganization))
	m.alias.Handle("GET "+orgPrefix+"/alias/{alias}", s.realmAdmin("", s.getOrganizationByAlias))
	m.org.Handle("GET "+orgPrefix+"/{orgId}", s.realmAdmin("", s.getOrganization))
	m.org.Handle("PUT "+orgPrefix+"/{orgId}", s.realmAdmin("organization.update", s.updateOrganization))
	m.org.Handle("DELETE "+orgPrefix+"/{orgId}", s.realmAdmin("organization.delete", s.deleteOrganization))

	s.departmentRoutes(m)
	s.assignmentRoutes(m)
	s.roleRoutes(m)
	s.groupRoutes(m)
	s.applicationRoutes(m)
	s.templateRoutes(m)
}

// orgJSON is an organization on the wire.
type orgJSON struct {
	ID          string              `json:"id"`
	Name        string              `json:"name"`
	Alias       string              `json:"alias"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
}

func toOrgJSON(o *store.Organization) orgJSON {
	return orgJSON{ID: o.ID, Name: o.Name, Alias: o.Alias, Description: o.Description, Attributes: attrsJSON(o.Attributes)}
}

// orgBody is the body of POST and PUT on organizations; PUT ignores alias.
type orgBody struct {
	Name        string              `json:"name"`
	Alias       string              `json:"alias"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
}

func (b orgBody) spec() store.OrgSpec {
	return store.OrgSpec{Name: b.Name, Alias: b.Alias, Description: b.Description, Attributes: b.Attributes}
}

// deletedJSON is the result of every DELETE.
type deletedJSON struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) listOrganizations(w http.ResponseWriter, r *http.Request, _ *caller) {
	var body listBody[orgJSON]
	err := s.readRealm(r, func(rm *store.Realm, maxPage int) error {
		p, err := parsePage(r, 20, maxPage)
		if err != nil {
			return err
		}
		body = pageBody(p, rm.Organizations(r.URL.Query().Get("search")), toOrgJSON)
		return nil
	})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) createOrganization(w http.ResponseWriter, r *http.Request, c *caller) {
	var in orgBody
	if err := decodeBody(r, &in); err != nil {
		fail(w, err)
		return
	}
	var out orgJSON
	err := s.writeRealm(r, func(rm *store.Realm, now time.Time) error {
		o, err := rm.CreateOrganization(in.spec(), now)
		if err != nil {
			return err
		}
		out = toOrgJSON(o)
		return nil
	})
	if err != nil {
		fail(w, err)
		return
	}
	c.resourceID = out.ID
	created(w, r, out.ID, out)
}

func (s *Server) getOrganizationByAlias(w http.ResponseWriter, r *http.Request, _ *caller) {
	s.readOne(w, r, func(rm *store.Realm) (any, error) {
		o, err := rm.OrganizationByAlias(r.PathValue("alias"))
		if err != nil {
			return nil, err
		}
		return toOrgJSON(o), nil
	})
}

func (s *Server) getOrganization(w http.ResponseWriter, r *http.Request, _ *caller) {
	s.readOne(w, r, func(rm *store.Realm) (any, error) {
		o, err := rm.Organization(r.PathValue("orgId"))
		if err != nil {
			return nil, err
		}
		return toOrgJSON(o), nil
	})
}

func (s *Server) updateOrganization(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	c.resourceID = orgID
	var in orgBody
	derr := decodeBody(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		if _, err := rm.Organization(orgID); err != nil {
			return nil, err
		}
		if derr != nil {
			return nil, derr
		}
		o, err := rm.UpdateOrganization(orgID, in.spec())
		if err != nil {
			return nil, err
		}
		return toOrgJSON(o), nil
	})
}

func (s *Server) deleteOrganization(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	c.resourceID = orgID
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		return deletedJSON{ID: orgID, Deleted: true}, rm.DeleteOrganization(orgID)
	})
}

// Helpers shared by the organization API's handlers.

// maxPageSize returns the configured page size limit.
func maxPageSize(st *store.State) int {
	if st.Config.MaxPageSize > 0 {
		return st.Config.MaxPageSize
	}
	return 100
}

// readRealm runs fn on the path's realm under the store's read lock, with
// the configured page size limit.
func (s *Server) readRealm(r *http.Request, fn func(rm *store.Realm, maxPage int) error) error {
	return s.store.Read(func(st *store.State) error {
		rm, err := st.Realm(r.PathValue("realm"))
		if err != nil {
			return err
		}
		return fn(rm, maxPageSize(st))
	})
}

// writeRealm runs fn on the path's realm under the store's write lock, with
// the store's current time. fn must check everything before its first
// change.
func (s *Server) writeRealm(r *http.Request, fn func(rm *store.Realm, now time.Time) error) error {
	return s.store.Write(func(st *store.State) error {
		rm, err := st.Realm(r.PathValue("realm"))
		if err != nil {
			return err
		}
		return fn(rm, st.Now())
	})
}

// readOne answers 200 {"result": v} with the v fn builds under the read
// lock, or the error.
func (s *Server) readOne(w http.ResponseWriter, r *http.Request, fn func(rm *store.Realm) (any, error)) {
	var out any
	err := s.readRealm(r, func(rm *store.Realm, _ int) error {
		v, err := fn(rm)
		out = v
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	writeResult(w, http.StatusOK, out)
}

// writeOne answers 200 {"result": v} with the v fn builds under the write
// lock, or the error.
func (s *Server) writeOne(w http.ResponseWriter, r *http.Request, fn func(rm *store.Realm, now time.Time) (any, error)) {
	var out any
	err := s.writeRealm(r, func(rm *store.Realm, now time.Time) error {
		v, err := fn(rm, now)
		out = v
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	writeResult(w, http.StatusOK, out)
}

// readList answers a paginated list: fn parses what it needs from the
// request and returns the whole (sorted, converted) body for the page.
func (s *Server) readList(w http.ResponseWriter, r *http.Request, fn func(rm *store.Realm, maxPage int) (any, error)) {
	var out any
	err := s.readRealm(r, func(rm *store.Realm, maxPage int) error {
		v, err := fn(rm, maxPage)
		out = v
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// pageBody builds the paginated body of the window p of all, converting only
// the items on the page.
func pageBody[T, U any](p page, all []T, conv func(T) U) listBody[U] {
	var body listBody[U]
	body.MetaData.CurrentPagination = p
	body.MetaData.TotalRows = len(all)
	start := min(p.Offset, len(all))
	end := min(start+p.Count, len(all))
	body.Results = make([]U, 0, end-start)
	for _, v := range all[start:end] {
		body.Results = append(body.Results, conv(v))
	}
	return body
}

// created answers 201 {"result": v} with a Location naming id under the
// request's collection path.
func created(w http.ResponseWriter, r *http.Request, id string, v any) {
	w.Header().Set("Location", strings.TrimSuffix(r.URL.Path, "/")+"/"+id)
	writeResult(w, http.StatusCreated, v)
}

// fail writes err as the error body; a store field error becomes a 400
// naming the field.
func fail(w http.ResponseWriter, err error) {
	var fe *store.FieldError
	if errors.As(err, &fe) {
		err = badField(fe.Field, "%s", fe.Message)
	}
	writeErr(w, err)
}

// attrsJSON copies attributes for the wire: never null, and no null lists.
func attrsJSON(a store.Attributes) map[string][]string {
	out := make(map[string][]string, len(a))
	for k, v := range a {
		out[k] = append([]string{}, v...)
	}
	return out
}

// boolParam reads an optional true/false query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "":
		return false, nil
	case "true", "false":
		return v == "true", nil
	default:
		return false, badField(name, "must be true or false")
	}
}

// timeJSON formats a timestamp as RFC 3339 UTC.
func timeJSON(t time.Time) string { return t.UTC().Format(time.RFC3339) }
