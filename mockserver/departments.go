package mockserver

import (
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// departmentRoutes registers departments (spec 4.2) and sub-departments
// (4.3). /departments/{departmentId} resolves a department at any depth of
// the organization; /sub-departments/{subDeptId} must be a direct child of
// {departmentId}.
func (s *Server) departmentRoutes(m orgMuxes) {
	const depts = orgPrefix + "/{orgId}/departments"
	const subs = depts + "/{departmentId}/sub-departments"
	m.org.Handle("GET "+depts, s.realmAdmin("", s.listDepartments))
	m.org.Handle("GET "+depts+"/tenant-tree", s.realmAdmin("", s.departmentTree))
	m.org.Handle("POST "+depts, s.realmAdmin("department.create", s.createDepartment))
	m.org.Handle("GET "+depts+"/{departmentId}", s.realmAdmin("", s.getDepartment))
	m.org.Handle("PUT "+depts+"/{departmentId}", s.realmAdmin("department.update", s.updateDepartment))
	m.org.Handle("DELETE "+depts+"/{departmentId}", s.realmAdmin("department.delete", s.deleteDepartment))

	m.org.Handle("GET "+subs, s.realmAdmin("", s.listDepartments))
	m.org.Handle("POST "+subs, s.realmAdmin("department.create", s.createDepartment))
	m.org.Handle("GET "+subs+"/{subDeptId}", s.realmAdmin("", s.getDepartment))
	m.org.Handle("PUT "+subs+"/{subDeptId}", s.realmAdmin("department.update", s.updateDepartment))
	m.org.Handle("DELETE "+subs+"/{subDeptId}", s.realmAdmin("department.delete", s.deleteDepartment))
}

// deptJSON is a department on the wire.
type deptJSON struct {
	ID          string              `json:"id"`
	Name        string              `json:"name"`
	Alias       string              `json:"alias"`
	Description string              `json:"description"`
	ParentID    string              `json:"parentId"`
	Attributes  map[string][]string `json:"attributes"`
}

func (d deptJSON) id() string { return d.ID }

func toDeptJSON(d *store.Department) deptJSON {
	return deptJSON{ID: d.ID, Name: d.Name, Alias: d.Alias, Description: d.Description,
		ParentID: d.ParentID, Attributes: attrsJSON(d.Attributes)}
}

// treeNodeJSON is a node of tenant-tree and assignments-tree.
type treeNodeJSON struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Children []treeNodeJSON `json:"children"`
}

func toTreeJSON(nodes []*store.DeptNode) []treeNodeJSON {
	out := make([]treeNodeJSON, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, treeNodeJSON{ID: n.Dept.ID, Name: n.Dept.Name, Children: toTreeJSON(n.Children)})
	}
	return out
}

// deptBody is the body of POST and PUT on departments. PUT ignores alias and
// templateId; a POST with templateId instantiates that department template
// and ignores the other fields.
type deptBody struct {
	Name        string              `json:"name"`
	Alias       string              `json:"alias"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
	TemplateID  string              `json:"templateId"`
}

func (b deptBody) spec() store.DeptSpec {
	return store.DeptSpec{Name: b.Name, Alias: b.Alias, Description: b.Description, Attributes: b.Attributes}
}

// deptPath resolves the department a request's path names: {subDeptId}
// as a direct child of {departmentId} when present, else {departmentId} at
// any depth.
func deptPath(rm *store.Realm, r *http.Request) (*store.Department, error) {
	orgID, deptID := r.PathValue("orgId"), r.PathValue("departmentId")
	if sub := r.PathValue("subDeptId"); sub != "" {
		return rm.SubDepartment(orgID, deptID, sub)
	}
	return rm.Department(orgID, deptID)
}

// listDepartments lists the root departments of an organization, or the
// children of {departmentId} on the sub-departments path, where
// {departmentId} must be a department of the organization (the
// organization's own id is a 404).
func (s *Server) listDepartments(w http.ResponseWriter, r *http.Request, _ *caller) {
	listSorted(s, w, r, defaultPageSize, func(rm *store.Realm) (*store.SortedList[*store.Department], error) {
		return rm.Departments(r.PathValue("orgId"), r.PathValue("departmentId"))
	}, toDeptJSON)
}

// parentExists reports ErrNotFound unless the organization, and the parent
// department when parentID is set, exist.
func parentExists(rm *store.Realm, orgID, parentID string) error {
	if parentID == "" {
		return found(rm.Organization(orgID))
	}
	return found(rm.Department(orgID, parentID))
}

func (s *Server) departmentTree(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) ([]*store.DeptNode, error) {
		return rm.DepartmentTree(r.PathValue("orgId"))
	}, toTreeJSON)
}

// createDepartment creates a root department, or a child of {departmentId}
// on the sub-departments path, from the body or from a department template.
func (s *Server) createDepartment(w http.ResponseWriter, r *http.Request, c *caller) {
	orgID, parentID := r.PathValue("orgId"), r.PathValue("departmentId")
	var in deptBody
	check := bodyAfter(r, &in)
	s.createOne(w, r, c, r.URL.EscapedPath(), func(rm *store.Realm, now time.Time) (string, any, error) {
		if err := check(parentExists(rm, orgID, parentID)); err != nil {
			return "", nil, err
		}
		if in.TemplateID != "" {
			return created(toDeptJSON)(rm.InstantiateTemplate(orgID, parentID, in.TemplateID, now))
		}
		return created(toDeptJSON)(rm.CreateDepartment(orgID, parentID, in.spec(), now))
	})
}

func (s *Server) getDepartment(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) (*store.Department, error) {
		return deptPath(rm, r)
	}, toDeptJSON)
}

func (s *Server) updateDepartment(w http.ResponseWriter, r *http.Request, c *caller) {
	var in deptBody
	check := bodyAfter(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		d, err := deptPath(rm, r)
		if err == nil {
			c.resourceID = d.ID
		}
		if err := check(err); err != nil {
			return nil, err
		}
		return wire(toDeptJSON)(rm.UpdateDepartment(d.OrgID, d.ID, in.spec()))
	})
}

// deleteDepartment removes the department with its subtree and their
// assignments.
func (s *Server) deleteDepartment(w http.ResponseWriter, r *http.Request, c *caller) {
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		d, err := deptPath(rm, r)
		if err != nil {
			return nil, err
		}
		c.resourceID = d.ID
		if _, err := rm.DeleteDepartment(d.OrgID, d.ID); err != nil {
			return nil, err
		}
		return deletedJSON{ID: c.resourceID, Deleted: true}, nil
	})
}
