package mockserver

import (
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
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

func (o orgJSON) id() string { return o.ID }

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

// listOrganizations lists the realm's organizations, paginated. It is an
// extension of the specification, which lists no GET on the collection.
func (s *Server) listOrganizations(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, defaultPageSize, func(rm *store.Realm) ([]*store.Organization, error) {
		return rm.Organizations(r.URL.Query().Get("search")), nil
	}, toOrgJSON)
}

func (s *Server) createOrganization(w http.ResponseWriter, r *http.Request, c *caller) {
	var in orgBody
	if err := decodeBody(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	s.createOne(w, r, c, r.URL.EscapedPath(), func(rm *store.Realm, now time.Time) (string, any, error) {
		return created(toOrgJSON)(rm.CreateOrganization(in.spec(), now))
	})
}

func (s *Server) getOrganizationByAlias(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.Organization, error) {
		return rm.OrganizationByAlias(r.PathValue("alias"))
	}, toOrgJSON)
}

func (s *Server) getOrganization(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.Organization, error) {
		return rm.Organization(r.PathValue("orgId"))
	}, toOrgJSON)
}

func (s *Server) updateOrganization(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	c.resourceID = orgID
	var in orgBody
	check := bodyAfter(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		if err := check(found(rm.Organization(orgID))); err != nil {
			return nil, err
		}
		return wire(toOrgJSON)(rm.UpdateOrganization(orgID, in.spec()))
	})
}

func (s *Server) deleteOrganization(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	s.deleteOne(w, r, c, orgID, func(rm *store.Realm) error { return rm.DeleteOrganization(orgID) })
}
