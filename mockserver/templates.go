package mockserver

import (
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// templateRoutes registers property templates and department templates
// (spec 4.8). Department templates are immutable: GET and POST only.
func (s *Server) templateRoutes(m orgMuxes) {
	const props = orgPrefix + "/{orgId}/property-templates"
	const depts = orgPrefix + "/{orgId}/department-templates"
	m.org.Handle("GET "+props, s.realmAdmin("", s.listPropertyTemplates))
	m.org.Handle("POST "+props, s.realmAdmin("propertyTemplate.create", s.createPropertyTemplate))
	m.org.Handle("GET "+props+"/{templateId}", s.realmAdmin("", s.getPropertyTemplate))
	m.org.Handle("PUT "+props+"/{templateId}", s.realmAdmin("propertyTemplate.update", s.updatePropertyTemplate))
	m.org.Handle("DELETE "+props+"/{templateId}", s.realmAdmin("propertyTemplate.delete", s.deletePropertyTemplate))
	m.org.Handle("GET "+depts, s.realmAdmin("", s.listDepartmentTemplates))
	m.org.Handle("POST "+depts, s.realmAdmin("departmentTemplate.create", s.createDepartmentTemplate))
	m.org.Handle("GET "+depts+"/{templateId}", s.realmAdmin("", s.getDepartmentTemplate))
}

// propertyJSON is one property of a property template, on the wire and in
// request bodies.
type propertyJSON struct {
	Key           string   `json:"key"`
	Label         string   `json:"label"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	AllowedValues []string `json:"allowedValues"`
}

// propTmplJSON is a property template on the wire.
type propTmplJSON struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Properties  []propertyJSON `json:"properties"`
}

func (t propTmplJSON) id() string { return t.ID }

func toPropTmplJSON(t *store.PropertyTemplate) propTmplJSON {
	out := propTmplJSON{ID: t.ID, Name: t.Name, Description: t.Description, Properties: make([]propertyJSON, 0, len(t.Properties))}
	for _, p := range t.Properties {
		out.Properties = append(out.Properties, propertyJSON{Key: p.Key, Label: p.Label, Type: p.Type,
			Required: p.Required, AllowedValues: append([]string{}, p.AllowedValues...)})
	}
	return out
}

// propTmplBody is the body of POST and PUT on property templates.
type propTmplBody struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Properties  []propertyJSON `json:"properties"`
}

func (b propTmplBody) spec() store.PropertyTemplateSpec {
	s := store.PropertyTemplateSpec{Name: b.Name, Description: b.Description}
	for _, p := range b.Properties {
		s.Properties = append(s.Properties, store.Property{Key: p.Key, Label: p.Label, Type: p.Type,
			Required: p.Required, AllowedValues: p.AllowedValues})
	}
	return s
}

// templateNodeJSON is a node of a department template, on the wire and in
// request bodies.
type templateNodeJSON struct {
	Name       string              `json:"name"`
	Alias      string              `json:"alias"`
	Attributes map[string][]string `json:"attributes"`
	RoleIDs    []string            `json:"roleIds"`
	Children   []templateNodeJSON  `json:"children"`
}

func toTemplateNodeJSON(n store.TemplateNode) templateNodeJSON {
	out := templateNodeJSON{Name: n.Name, Alias: n.Alias, Attributes: attrsJSON(n.Attributes),
		RoleIDs: append([]string{}, n.RoleIDs...), Children: make([]templateNodeJSON, 0, len(n.Children))}
	for _, c := range n.Children {
		out.Children = append(out.Children, toTemplateNodeJSON(c))
	}
	return out
}

func (n templateNodeJSON) node() store.TemplateNode {
	out := store.TemplateNode{Name: n.Name, Alias: n.Alias, Attributes: n.Attributes, RoleIDs: n.RoleIDs}
	for _, c := range n.Children {
		out.Children = append(out.Children, c.node())
	}
	return out
}

// deptTmplJSON is a department template on the wire.
type deptTmplJSON struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Root        templateNodeJSON `json:"root"`
}

func (t deptTmplJSON) id() string { return t.ID }

func toDeptTmplJSON(t *store.DepartmentTemplate) deptTmplJSON {
	return deptTmplJSON{ID: t.ID, Name: t.Name, Description: t.Description, Root: toTemplateNodeJSON(t.Root)}
}

// deptTmplBody is the body of POST /{orgId}/department-templates.
type deptTmplBody struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Root        templateNodeJSON `json:"root"`
}

func (b deptTmplBody) spec() store.DeptTemplateSpec {
	return store.DeptTemplateSpec{Name: b.Name, Description: b.Description, Root: b.Root.node()}
}

func (s *Server) listPropertyTemplates(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, defaultPageSize, func(rm *store.Realm) ([]*store.PropertyTemplate, error) {
		return rm.PropertyTemplates(r.PathValue("orgId"))
	}, toPropTmplJSON)
}

func (s *Server) createPropertyTemplate(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	var in propTmplBody
	check := bodyAfter(r, &in)
	s.createOne(w, r, c, r.URL.EscapedPath(), func(rm *store.Realm, now time.Time) (string, any, error) {
		if err := check(found(rm.Organization(orgID))); err != nil {
			return "", nil, err
		}
		return created(toPropTmplJSON)(rm.CreatePropertyTemplate(orgID, in.spec(), now))
	})
}

func (s *Server) getPropertyTemplate(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.PropertyTemplate, error) {
		return rm.PropertyTemplate(r.PathValue("orgId"), r.PathValue("templateId"))
	}, toPropTmplJSON)
}

func (s *Server) updatePropertyTemplate(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID, id := r.PathValue("orgId"), r.PathValue("templateId")
	c.resourceID = id
	var in propTmplBody
	check := bodyAfter(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		if err := check(found(rm.PropertyTemplate(orgID, id))); err != nil {
			return nil, err
		}
		return wire(toPropTmplJSON)(rm.UpdatePropertyTemplate(orgID, id, in.spec()))
	})
}

func (s *Server) deletePropertyTemplate(w http.ResponseWriter, r *http.Request, c *caller) {
	id := r.PathValue("templateId")
	s.deleteOne(w, r, c, id, func(rm *store.Realm) error {
		return rm.DeletePropertyTemplate(r.PathValue("orgId"), id)
	})
}

func (s *Server) listDepartmentTemplates(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, defaultPageSize, func(rm *store.Realm) ([]*store.DepartmentTemplate, error) {
		return rm.DepartmentTemplates(r.PathValue("orgId"))
	}, toDeptTmplJSON)
}

func (s *Server) createDepartmentTemplate(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID := r.PathValue("orgId")
	var in deptTmplBody
	check := bodyAfter(r, &in)
	s.createOne(w, r, c, r.URL.EscapedPath(), func(rm *store.Realm, now time.Time) (string, any, error) {
		if err := check(found(rm.Organization(orgID))); err != nil {
			return "", nil, err
		}
		return created(toDeptTmplJSON)(rm.CreateDepartmentTemplate(orgID, in.spec(), now))
	})
}

func (s *Server) getDepartmentTemplate(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.DepartmentTemplate, error) {
		return rm.DepartmentTemplate(r.PathValue("orgId"), r.PathValue("templateId"))
	}, toDeptTmplJSON)
}
