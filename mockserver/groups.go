package mockserver

import (
	"net/http"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// groupRoutes registers organization groups (spec 4.6). A realm group is
// linked to at most one organization.
func (s *Server) groupRoutes(m orgMuxes) {
	const groups = orgPrefix + "/{orgId}/groups"
	m.org.Handle("GET "+groups, s.realmAdmin("", s.listOrgGroups))
	m.org.Handle("POST "+groups, s.realmAdmin("group.link", s.linkGroup))
	m.org.Handle("DELETE "+groups+"/{groupId}", s.realmAdmin("group.unlink", s.unlinkGroup))
}

// groupJSON is a realm group on the wire.
type groupJSON struct {
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Path       string              `json:"path"`
	Attributes map[string][]string `json:"attributes"`
}

func toGroupJSON(g *store.Group) groupJSON {
	return groupJSON{ID: g.ID, Name: g.Name, Path: g.Path, Attributes: attrsJSON(g.Attributes)}
}

// groupLinkBody is the body of POST /{orgId}/groups.
type groupLinkBody struct {
	GroupID string `json:"groupId"`
}

func (b groupLinkBody) ref() (string, string) { return "groupId", b.GroupID }

func (s *Server) listOrgGroups(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, defaultPageSize, func(rm *store.Realm) ([]*store.Group, error) {
		return rm.OrgGroupList(r.PathValue("orgId"))
	}, toGroupJSON)
}

// linkGroup links a realm group: 200 with the group (also when it was
// linked to this organization already), 409 when another organization has
// it.
func (s *Server) linkGroup(w http.ResponseWriter, r *http.Request, c *caller) {
	linkToOrg[groupLinkBody](s, w, r, func(rm *store.Realm, orgID, groupID string) (any, error) {
		c.resourceID = groupID
		if _, err := rm.LinkGroup(orgID, groupID); err != nil {
			return nil, err
		}
		return toGroupJSON(rm.Groups[groupID]), nil
	})
}

func (s *Server) unlinkGroup(w http.ResponseWriter, r *http.Request, c *caller) {
	groupID := r.PathValue("groupId")
	s.deleteOne(w, r, c, groupID, func(rm *store.Realm) error {
		return rm.UnlinkGroup(r.PathValue("orgId"), groupID)
	})
}
