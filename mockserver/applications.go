package mockserver

import (
	"net/http"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// applicationRoutes registers the realm's application catalog and the
// organization's applications (spec 4.7). Organization routes name an
// application by clientId, catalog routes by its id.
func (s *Server) applicationRoutes(m orgMuxes) {
	const apps = orgPrefix + "/{orgId}/applications"
	const catalog = orgPrefix + "/global/applications"
	m.org.Handle("GET "+apps, s.realmAdmin("", s.listOrgApplications))
	m.org.Handle("POST "+apps+"/assign", s.realmAdmin("application.assign", s.assignApplication))
	m.org.Handle("GET "+apps+"/{clientId}", s.realmAdmin("", s.getOrgApplication))
	m.org.Handle("DELETE "+apps+"/{clientId}", s.realmAdmin("application.unassign", s.unassignApplication))
	m.global.Handle("GET "+catalog, s.realmAdmin("", s.listCatalog))
	m.global.Handle("POST "+catalog, s.realmAdmin("application.register", s.registerApplication))
	m.global.Handle("GET "+catalog+"/{appId}", s.realmAdmin("", s.getCatalogApplication))
	m.global.Handle("PUT "+catalog+"/{appId}", s.realmAdmin("application.update", s.updateCatalogApplication))
	m.global.Handle("DELETE "+catalog+"/{appId}", s.realmAdmin("application.delete", s.deleteCatalogApplication))
}

// appJSON is a catalog application on the wire.
type appJSON struct {
	ID          string   `json:"id"`
	ClientID    string   `json:"clientId"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Status      string   `json:"status"`
	Assignable  bool     `json:"assignable"`
	CreatedAt   string   `json:"createdAt"`
}

func (a appJSON) id() string { return a.ID }

func toAppJSON(a *store.Application) appJSON {
	return appJSON{ID: a.ID, ClientID: a.ClientID, Name: a.Name, Description: a.Description,
		Tags: append([]string{}, a.Tags...), Status: a.Status, Assignable: a.Assignable, CreatedAt: timeJSON(a.CreatedAt)}
}

// appBody is the body of POST and PUT on the catalog; PUT ignores clientId.
// Omitted fields take their defaults: name the clientId, status ACTIVE,
// assignable true.
type appBody struct {
	ClientID    string   `json:"clientId"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Status      string   `json:"status"`
	Assignable  *bool    `json:"assignable"`
}

func (b appBody) spec() store.AppSpec {
	return store.AppSpec{ClientID: b.ClientID, Name: b.Name, Description: b.Description, Tags: b.Tags,
		Status: b.Status, Assignable: b.Assignable}
}

// appAssignBody is the body of POST /{orgId}/applications/assign.
type appAssignBody struct {
	ClientID string `json:"clientId"`
}

func (b appAssignBody) ref() (string, string) { return "clientId", b.ClientID }

// appQuery reads search, tag, sortBy (name, clientId, createdAt) and
// sortOrder (ASC, DESC) and records the sorting in p.
func appQuery(r *http.Request, p *page) (store.AppQuery, error) {
	q := r.URL.Query()
	aq := store.AppQuery{Search: q.Get("search"), Tag: q.Get("tag"), SortBy: store.SortByName}
	if v, ok := queryParam(q, "sortBy"); ok {
		switch v {
		case store.SortByName, store.SortByClientID, store.SortByCreatedAt:
			aq.SortBy = v
		default:
			return aq, badField("sortBy", "must be name, clientId or createdAt")
		}
	}
	p.SortBy, p.SortOrder = aq.SortBy, "ASC"
	if v, ok := queryParam(q, "sortOrder"); ok {
		switch v {
		case "ASC":
		case "DESC":
			aq.Desc, p.SortOrder = true, "DESC"
		default:
			return aq, badField("sortOrder", "must be ASC or DESC")
		}
	}
	return aq, nil
}

// appPage reads the page and the query of an application list, in that
// order, and returns the page of what list finds for the query.
func appPage(r *http.Request, maxPage int, list func(q store.AppQuery) ([]*store.Application, error)) (any, error) {
	p, err := parsePage(r, defaultPageSize, maxPage)
	if err != nil {
		return nil, err
	}
	q, err := appQuery(r, &p)
	if err != nil {
		return nil, err
	}
	apps, err := list(q)
	if err != nil {
		return nil, err
	}
	return pageBody(p, apps, toAppJSON), nil
}

func (s *Server) listOrgApplications(w http.ResponseWriter, r *http.Request, _ *caller) {
	s.readList(w, r, func(rm *store.Realm, maxPage int) (any, error) {
		orgID := r.PathValue("orgId")
		if _, err := rm.Organization(orgID); err != nil {
			return nil, err
		}
		return appPage(r, maxPage, func(q store.AppQuery) ([]*store.Application, error) {
			return rm.OrgAppList(orgID, q)
		})
	})
}

// assignApplication assigns a catalog application by clientId: 200 with
// the application, also on a repeat.
func (s *Server) assignApplication(w http.ResponseWriter, r *http.Request, c *caller) {
	linkToOrg[appAssignBody](s, w, r, func(rm *store.Realm, orgID, clientID string) (any, error) {
		a, _, err := rm.AssignApplication(orgID, clientID)
		if err != nil {
			return nil, err
		}
		c.resourceID = a.ID
		return toAppJSON(a), nil
	})
}

func (s *Server) getOrgApplication(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.Application, error) {
		return rm.OrgApplication(r.PathValue("orgId"), r.PathValue("clientId"))
	}, toAppJSON)
}

// unassignApplication removes the application from the organization; the
// catalog entry and the client stay. The result's id is the clientId.
func (s *Server) unassignApplication(w http.ResponseWriter, r *http.Request, c *caller) {
	clientID := r.PathValue("clientId")
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		a, err := rm.UnassignApplication(r.PathValue("orgId"), clientID)
		if err != nil {
			return nil, err
		}
		c.resourceID = a.ID
		return deletedJSON{ID: clientID, Deleted: true}, nil
	})
}

func (s *Server) listCatalog(w http.ResponseWriter, r *http.Request, _ *caller) {
	s.readList(w, r, func(rm *store.Realm, maxPage int) (any, error) {
		return appPage(r, maxPage, rm.CatalogApplications)
	})
}

// registerApplication adds an existing realm client to the catalog: 201.
func (s *Server) registerApplication(w http.ResponseWriter, r *http.Request, c *caller) {
	var in appBody
	if err := decodeBody(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	s.createOne(w, r, c, r.URL.EscapedPath(), func(rm *store.Realm, now time.Time) (string, any, error) {
		return created(toAppJSON)(rm.RegisterApplication(in.spec(), now))
	})
}

func (s *Server) getCatalogApplication(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.Application, error) {
		return rm.Application(r.PathValue("appId"))
	}, toAppJSON)
}

// updateCatalogApplication replaces name (required), description, tags,
// status and assignable.
func (s *Server) updateCatalogApplication(w http.ResponseWriter, r *http.Request, c *caller) {
	appID := r.PathValue("appId")
	c.resourceID = appID
	var in appBody
	check := bodyAfter(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		if err := check(found(rm.Application(appID))); err != nil {
			return nil, err
		}
		if strings.TrimSpace(in.Name) == "" {
			return nil, badField("name", "is required")
		}
		return wire(toAppJSON)(rm.UpdateApplication(appID, in.spec()))
	})
}

// deleteCatalogApplication removes the application from the catalog and
// from every organization; the realm client stays.
func (s *Server) deleteCatalogApplication(w http.ResponseWriter, r *http.Request, c *caller) {
	appID := r.PathValue("appId")
	s.deleteOne(w, r, c, appID, func(rm *store.Realm) error { return rm.DeleteApplication(appID) })
}
