package mockserver

import (
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// assignmentRoutes registers user assignments (spec 4.4).
func (s *Server) assignmentRoutes(m orgMuxes) {
	const users = orgPrefix + "/{orgId}/departments/{departmentId}/users"
	m.org.Handle("GET "+users, s.realmAdmin("", s.listDepartmentUsers))
	m.org.Handle("POST "+users, s.realmAdmin("assignment.create", s.assignUser))
	m.org.Handle("DELETE "+users+"/{userId}", s.realmAdmin("assignment.delete", s.unassignUser))
	m.users.Handle("GET "+orgPrefix+"/users/{userId}/assignments", s.realmAdmin("", s.listUserAssignments))
	m.users.Handle("GET "+orgPrefix+"/users/{userId}/assignments-tree", s.realmAdmin("", s.userAssignmentTree))
}

// deptUserJSON is an item of a department's user list.
type deptUserJSON struct {
	UserID       string `json:"userId"`
	Username     string `json:"username"`
	DepartmentID string `json:"departmentId"`
	AssignedAt   string `json:"assignedAt"`
}

func toDeptUserJSON(u store.DepartmentUser) deptUserJSON {
	return deptUserJSON{UserID: u.UserID, Username: u.Username, DepartmentID: u.DepartmentID, AssignedAt: timeJSON(u.AssignedAt)}
}

// assignmentJSON is the result of assigning a user.
type assignmentJSON struct {
	UserID       string `json:"userId"`
	DepartmentID string `json:"departmentId"`
	AssignedAt   string `json:"assignedAt"`
}

// userAssignmentJSON is an item of a user's assignment list.
type userAssignmentJSON struct {
	UserID           string `json:"userId"`
	OrganizationID   string `json:"organizationId"`
	OrganizationName string `json:"organizationName"`
	DepartmentID     string `json:"departmentId"`
	DepartmentName   string `json:"departmentName"`
}

func toUserAssignmentJSON(a store.UserAssignment) userAssignmentJSON {
	return userAssignmentJSON{UserID: a.UserID, OrganizationID: a.Org.ID, OrganizationName: a.Org.Name,
		DepartmentID: a.Dept.ID, DepartmentName: a.Dept.Name}
}

// assignBody is the body of POST .../users. departmentId, when present, must
// be the path's.
type assignBody struct {
	UserID       string `json:"userId"`
	DepartmentID string `json:"departmentId"`
}

func (s *Server) listDepartmentUsers(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, defaultPageSize, func(rm *store.Realm) ([]store.DepartmentUser, error) {
		d, err := deptPath(rm, r)
		if err != nil {
			return nil, err
		}
		return rm.DepartmentUsers(d.OrgID, d.ID)
	}, toDeptUserJSON)
}

// assignUser assigns a user to the department: 200 with the assignment, the
// original one on a repeat.
func (s *Server) assignUser(w http.ResponseWriter, r *http.Request, c *caller) {
	var in assignBody
	check := bodyAfter(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, now time.Time) (any, error) {
		d, err := deptPath(rm, r)
		if err = check(err); err != nil {
			return nil, err
		}
		switch {
		case in.UserID == "":
			return nil, badField("userId", "is required")
		case in.DepartmentID != "" && in.DepartmentID != d.ID:
			return nil, badField("departmentId", "must equal the department of the path")
		}
		c.resourceID = in.UserID
		a, _, err := rm.Assign(in.UserID, d.ID, now)
		if err != nil {
			return nil, err
		}
		return assignmentJSON{UserID: a.UserID, DepartmentID: a.DepartmentID, AssignedAt: timeJSON(a.AssignedAt)}, nil
	})
}

func (s *Server) unassignUser(w http.ResponseWriter, r *http.Request, c *caller) {
	userID := r.PathValue("userId")
	s.deleteOne(w, r, c, userID, func(rm *store.Realm) error {
		d, err := deptPath(rm, r)
		if err != nil {
			return err
		}
		return rm.Unassign(userID, d.ID)
	})
}

func (s *Server) listUserAssignments(w http.ResponseWriter, r *http.Request, _ *caller) {
	listPage(s, w, r, defaultPageSize, func(rm *store.Realm) ([]store.UserAssignment, error) {
		return rm.UserAssignments(r.PathValue("userId"))
	}, toUserAssignmentJSON)
}

// userAssignmentTree answers the organizations the user is assigned in, each
// with its departments pruned to the paths leading to the user's.
func (s *Server) userAssignmentTree(w http.ResponseWriter, r *http.Request, _ *caller) {
	getOne(s, w, r, func(rm *store.Realm) ([]*store.OrgNode, error) {
		return rm.AssignmentTree(r.PathValue("userId"))
	}, toOrgTreeJSON)
}

// toOrgTreeJSON converts organizations with their department subtrees into
// tree nodes.
func toOrgTreeJSON(orgs []*store.OrgNode) []treeNodeJSON {
	out := make([]treeNodeJSON, 0, len(orgs))
	for _, o := range orgs {
		out = append(out, treeNodeJSON{ID: o.Org.ID, Name: o.Org.Name, Children: toTreeJSON(o.Children)})
	}
	return out
}
