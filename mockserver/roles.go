package mockserver

import (
	"net/http"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// roleRoutes registers organization roles and the realm's global role list
// (spec 4.5). Role lists default to 50 per page.
func (s *Server) roleRoutes(m orgMuxes) {
	const roles = orgPrefix + "/{orgId}/roles"
	m.org.Handle("GET "+roles, s.realmAdmin("", s.listOrgRoles))
	m.org.Handle("GET "+roles+"/available", s.realmAdmin("", s.listAvailableRoles))
	m.org.Handle("GET "+roles+"/{roleId}", s.realmAdmin("", s.getOrgRole))
	m.org.Handle("POST "+roles, s.realmAdmin("role.link", s.linkRole))
	m.org.Handle("POST "+roles+"/create", s.realmAdmin("role.create", s.createOrgRole))
	m.org.Handle("DELETE "+roles+"/{roleId}", s.realmAdmin("role.unlink", s.unlinkRole))
	m.global.Handle("GET "+orgPrefix+"/global/roles", s.realmAdmin("", s.listGlobalRoles))
}

// rolePageSize is the default page size of role lists.
const rolePageSize = 50

// roleJSON is a realm role on the wire.
type roleJSON struct {
	ID          string              `json:"id"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
}

func (r roleJSON) id() string { return r.ID }

func toRoleJSON(r *store.Role) roleJSON {
	return roleJSON{ID: r.ID, Name: r.Name, Description: r.Description, Attributes: attrsJSON(r.Attributes)}
}

// roleLinkBody is the body of POST /{orgId}/roles.
type roleLinkBody struct {
	RoleID string `json:"roleId"`
}

func (b roleLinkBody) ref() (string, string) { return "roleId", b.RoleID }

// roleBody is the body of POST /{orgId}/roles/create.
type roleBody struct {
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
}

func (b roleBody) spec() store.RoleSpec {
	return store.RoleSpec{Name: b.Name, Description: b.Description, Attributes: b.Attributes}
}

// listOrgRoles lists the roles linked to the organization; isGlobal=true
// adds every global role.
func (s *Server) listOrgRoles(w http.ResponseWriter, r *http.Request, _ *caller) {
	s.listRolesOfOrg(w, r, "isGlobal", (*store.Realm).OrgRoleList)
}

// listAvailableRoles lists the realm roles neither linked nor global;
// includeGlobal=true adds the unlinked global roles.
func (s *Server) listAvailableRoles(w http.ResponseWriter, r *http.Request, _ *caller) {
	s.listRolesOfOrg(w, r, "includeGlobal", (*store.Realm).AvailableRoles)
}

// listRolesOfOrg answers a page of the roles list returns for the path's
// organization, passing it the value of the boolean query parameter named
// flag. Errors come in this order: the organization, the page, the flag,
// list's.
func (s *Server) listRolesOfOrg(w http.ResponseWriter, r *http.Request, flag string,
	list func(rm *store.Realm, orgID string, on bool) ([]*store.Role, error)) {
	s.readList(w, r, func(rm *store.Realm, maxPage int) (any, error) {
		orgID := r.PathValue("orgId")
		if _, err := rm.Organization(orgID); err != nil {
			return nil, err
		}
		p, err := parsePage(r, rolePageSize, maxPage)
		if err != nil {
			return nil, err
		}
		on, err := boolParam(r, flag)
		if err != nil {
			return nil, err
		}
		roles, err := list(rm, orgID, on)
		if err != nil {
			return nil, err
		}
		return pageBody(p, roles, toRoleJSON), nil
	})
}

// linkRole links an existing realm role: 200 with the role, whether or not
// it was linked before.
func (s *Server) linkRole(w http.ResponseWriter, r *http.Request, c *caller) {
	linkToOrg[roleLinkBody](s, w, r, func(rm *store.Realm, orgID, roleID string) (any, error) {
		c.resourceID = roleID
		if _, err := rm.LinkRole(orgID, roleID); err != nil {
			return nil, err
		}
		return toRoleJSON(rm.Roles[roleID]), nil
	})
}

// createOrgRole creates a realm role and links it: 201.
func (s *Server) createOrgRole(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	var in roleBody
	check := bodyAfter(r, &in)
	roles := strings.TrimSuffix(r.URL.EscapedPath(), "/create")
	s.createOne(w, r, c, roles, func(rm *store.Realm, _ time.Time) (string, any, error) {
		if err := check(found(rm.Organization(orgID))); err != nil {
			return "", nil, err
		}
		return created(toRoleJSON)(rm.CreateOrgRole(orgID, in.spec()))
	})
}

// getOrgRole answers a role linked to the organization (the Location of a
// role made with POST /roles/create); a role that is not linked, global or
// not, is a 404. It is an extension of the specification.
func (s *Server) getOrgRole(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.Role, error) {
		return rm.OrgRole(r.PathValue("orgId"), r.PathValue("roleId"))
	}, toRoleJSON)
}

func (s *Server) unlinkRole(w http.ResponseWriter, r *http.Request, c *caller) {
	roleID := r.PathValue("roleId")
	s.deleteOne(w, r, c, roleID, func(rm *store.Realm) error {
		return rm.UnlinkRole(r.PathValue("orgId"), roleID)
	})
}

// listGlobalRoles lists every realm role; search is a case-insensitive
// substring of the name.
func (s *Server) listGlobalRoles(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, rolePageSize, func(rm *store.Realm) ([]*store.Role, error) {
		return rm.RealmRoles(r.URL.Query().Get("search")), nil
	}, toRoleJSON)
}
