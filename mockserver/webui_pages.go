package mockserver

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// This file builds what each page of the web UI shows. Every page copies
// what it shows out of the realm under the realm's read lock, into values
// of its own, and renders them after the lock is released.

// maxUIRows bounds each list a page shows (every list is a bounded, nested
// lists and an evaluation's pairs included; a tree has at most maxUIRows
// departments in all); a longer list says how many it left out.
const maxUIRows = 500

// uiFrame is what the layout shows around every page: the realm, the
// signed-in user and the CSRF token of the page's forms (logout). A page
// without a session has the zero frame.
type uiFrame struct {
	Realm, User, CSRF string
	Title             string
}

// frame returns the frame of a page of ss titled title.
func (s *Server) frame(ss *uiSession, title string) uiFrame {
	return uiFrame{Realm: ss.realm, User: ss.username, CSRF: s.ui.csrfToken(ss), Title: title}
}

// uiLink is a named link to one of the realm's objects, by id.
type uiLink struct{ ID, Name, Note string }

// uiHomePage is the realm's first page: its organizations, users and
// clients.
type uiHomePage struct {
	uiFrame
	Orgs, Users, Clients uiList
}

func (s *Server) uiHome(w http.ResponseWriter, _ *http.Request, ss *uiSession) {
	p := uiHomePage{uiFrame: s.frame(ss, "Realm "+ss.realm)}
	_ = s.liveRealm(ss.realm, func(rm *store.Realm) error {
		var orgs []uiLink
		for _, o := range rm.Organizations("") {
			orgs = append(orgs, uiLink{ID: o.ID, Name: o.Name, Note: o.Alias})
		}
		p.Orgs = boundedList(orgs)
		p.Users = boundedList(realmUsers(rm))
		var clients []uiLink
		for _, c := range rm.Clients {
			note := "confidential"
			if c.Public {
				note = "public"
			}
			clients = append(clients, uiLink{ID: c.ClientID, Name: c.ClientID, Note: note})
		}
		sortLinks(clients)
		p.Clients = boundedList(clients)
		return nil
	})
	s.uiRender(w, http.StatusOK, "home", p)
}

// realmUsers lists the realm's people (not service accounts) by username.
func realmUsers(rm *store.Realm) []uiLink {
	var users []uiLink
	for _, u := range rm.Users {
		if u.ServiceAccountOf == "" {
			users = append(users, uiLink{ID: u.ID, Name: u.Username, Note: u.Email})
		}
	}
	sortLinks(users)
	return users
}

func sortLinks(ls []uiLink) {
	slices.SortFunc(ls, func(a, b uiLink) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
}

// uiDept is a department of the tree with its members.
type uiDept struct {
	ID, Name, Alias string
	Roles           bounded[string] // the roles its template grants members
	Members         uiList
	Children        bounded[*uiDept]
}

// uiOrgPage is an organization's department tree with each department's
// members.
type uiOrgPage struct {
	uiFrame
	ID, Name, Alias, Description string
	Roles, Groups                bounded[string] // linked to the organization
	Tree                         bounded[*uiDept]
	Omitted                      int // departments left out past maxUIRows, at any depth
}

func (s *Server) uiOrganization(w http.ResponseWriter, r *http.Request, ss *uiSession) {
	orgID := r.PathValue("orgId")
	var p uiOrgPage
	err := s.liveRealm(ss.realm, func(rm *store.Realm) error {
		o, err := rm.Organization(orgID)
		if err != nil {
			return err
		}
		tree, err := rm.DepartmentTree(orgID)
		if err != nil {
			return err
		}
		p = uiOrgPage{uiFrame: s.frame(ss, "Organization "+o.Name), ID: o.ID, Name: o.Name, Alias: o.Alias, Description: o.Description,
			Roles: bound(rm.RoleNames(rm.OrgRoles[o.ID]))}
		var groups []string
		for gid := range rm.OrgGroups[o.ID] {
			if g, ok := rm.Groups[gid]; ok {
				groups = append(groups, g.Name)
			}
		}
		slices.Sort(groups)
		p.Groups = bound(groups)
		shown := 0
		var build func(ns []*store.DeptNode) bounded[*uiDept]
		build = func(ns []*store.DeptNode) bounded[*uiDept] {
			var out bounded[*uiDept]
			for _, n := range ns {
				if shown >= maxUIRows {
					p.Omitted++
					out.More++
					continue
				}
				shown++
				d := &uiDept{ID: n.Dept.ID, Name: n.Dept.Name, Alias: n.Dept.Alias, Roles: bound(roleNames(rm, n.Dept.TemplateRoleIDs))}
				users, _ := rm.DepartmentUsers(orgID, n.Dept.ID)
				members := make([]uiLink, 0, len(users))
				for _, u := range users {
					members = append(members, uiLink{ID: u.UserID, Name: u.Username})
				}
				d.Members = boundedList(members)
				d.Children = build(n.Children)
				out.Rows = append(out.Rows, d)
			}
			return out
		}
		p.Tree = build(tree)
		return nil
	})
	s.uiShow(w, r, "organization", p, err)
}

// roleNames returns the names of the roles ids names, sorted.
func roleNames(rm *store.Realm, ids []string) []string {
	set := store.Set{}
	for _, id := range ids {
		set[id] = struct{}{}
	}
	return rm.RoleNames(set)
}

// uiMembership is a user's departments in one organization.
type uiMembership struct {
	OrgID, OrgName string
	Depts          bounded[string]
}

// uiUserPage is a user: the direct roles, the groups, the organizations
// and departments, and the effective roles with where each comes from.
type uiUserPage struct {
	uiFrame
	ID, Username, Email string
	Roles, Groups       bounded[string]
	Memberships         bounded[uiMembership]
	// Effective are the roles a decision counts for the user (no
	// organization claim), each with every way the user holds it, from
	// the decision engine's own walk of the realm.
	Effective bounded[uiRole]
}

func (s *Server) uiUser(w http.ResponseWriter, r *http.Request, ss *uiSession) {
	userID := r.PathValue("userId")
	var p uiUserPage
	err := s.liveRealm(ss.realm, func(rm *store.Realm) error {
		u, ok := rm.Users[userID]
		if !ok {
			return store.NotFound("user %q", userID)
		}
		p = uiUserPage{uiFrame: s.frame(ss, "User "+u.Username), ID: u.ID, Username: u.Username, Email: u.Email,
			Roles: bound(rm.RoleNames(u.RoleIDs))}
		var groups []string
		for gid := range u.GroupIDs {
			if g, ok := rm.Groups[gid]; ok {
				groups = append(groups, g.Name)
			}
		}
		slices.Sort(groups)
		p.Groups = bound(groups)
		p.Effective = uiRoles(decision.EffectiveRoles(rm, u.ID, ""))
		var ms []uiMembership
		for _, m := range rm.UserOrganizations(u.ID, "") {
			var depts []string
			for _, d := range m.Depts {
				depts = append(depts, d.Name)
			}
			ms = append(ms, uiMembership{OrgID: m.Org.ID, OrgName: m.Org.Name, Depts: bound(depts)})
		}
		p.Memberships = bound(ms)
		return nil
	})
	s.uiShow(w, r, "user", p, err)
}

// uiResource is a client resource with its scopes.
type uiResource struct {
	Name   string
	Scopes bounded[string]
}

// uiPermission is a client permission, its grantees by name.
type uiPermission struct {
	Name, Resource, OwnerProperty string
	Scopes, Methods               bounded[string]
	Roles, Groups, Users          bounded[string]
}

// uiClientPage is a client's resources and permissions.
type uiClientPage struct {
	uiFrame
	ClientID    string
	Public      bool
	Resources   bounded[uiResource]
	Permissions bounded[uiPermission]
}

func (s *Server) uiClient(w http.ResponseWriter, r *http.Request, ss *uiSession) {
	clientID := r.PathValue("clientId")
	var p uiClientPage
	err := s.liveRealm(ss.realm, func(rm *store.Realm) error {
		c, ok := rm.ClientNamed(clientID)
		if !ok {
			return store.NotFound("client %q", clientID)
		}
		p = uiClientPage{uiFrame: s.frame(ss, "Client "+c.ClientID), ClientID: c.ClientID, Public: c.Public}
		p.Resources = boundMap(c.Resources, func(res *store.ClientResource) uiResource {
			return uiResource{Name: res.Name, Scopes: bound(slices.Clone(res.Scopes))}
		})
		p.Permissions = boundMap(c.Permissions, func(pm *store.ClientPermission) uiPermission {
			up := uiPermission{Name: pm.Name, Resource: pm.Resource, OwnerProperty: pm.OwnerProperty,
				Scopes: bound(slices.Clone(pm.Scopes)), Methods: bound(slices.Clone(pm.Methods)), Roles: bound(roleNames(rm, pm.Roles))}
			var groups, users []string
			for _, id := range pm.Groups {
				if g, ok := rm.Groups[id]; ok {
					groups = append(groups, g.Name)
				}
			}
			for _, id := range pm.Users {
				if u, ok := rm.Users[id]; ok {
					users = append(users, u.Username)
				}
			}
			up.Groups, up.Users = bound(groups), bound(users)
			return up
		})
		return nil
	})
	s.uiShow(w, r, "client", p, err)
}

// uiEvalPage is the evaluator: its form, and after a POST the decision
// with its reasons.
type uiEvalPage struct {
	uiFrame
	Users, Clients uiList
	Methods        bounded[string]
	// The request: the subject's username, the client's clientId, the
	// resource, the scope, the method ("" for none) and the organization
	// (id or alias, as a token's organization claim; "" for none).
	Subject, Client, Resource, Scope, Method, Organization string
	Problem                                                string // why the request could not be evaluated
	// Explanation is the decision with its reasons, as the deciding
	// code recorded them (at most maxUIRows pairs); nil before an
	// evaluation.
	Explanation *uiExplanation
}

// maxNoteNames bounds the resource names the evaluator's client choice
// shows of each client.
const maxNoteNames = 10

// evalMethods are the methods the evaluator offers; empty means none.
var evalMethods = []string{"", http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// evalForm returns the evaluator's form with its choices filled in.
func (s *Server) evalForm(ss *uiSession) uiEvalPage {
	p := uiEvalPage{uiFrame: s.frame(ss, "Evaluator"), Methods: bound(evalMethods)}
	_ = s.liveRealm(ss.realm, func(rm *store.Realm) error {
		p.Users = boundedList(realmUsers(rm))
		var clients []uiLink
		for _, c := range rm.Clients {
			if len(c.Resources) > 0 {
				var names []string
				for _, res := range c.Resources[:min(len(c.Resources), maxNoteNames)] {
					names = append(names, res.Name)
				}
				note := strings.Join(names, ", ")
				if more := len(c.Resources) - len(names); more > 0 {
					note += fmt.Sprintf(" and %d more", more)
				}
				clients = append(clients, uiLink{ID: c.ClientID, Name: c.ClientID, Note: note})
			}
		}
		sortLinks(clients)
		p.Clients = boundedList(clients)
		return nil
	})
	return p
}

func (s *Server) uiEvaluateForm(w http.ResponseWriter, _ *http.Request, ss *uiSession) {
	s.uiRender(w, http.StatusOK, "evaluate", s.evalForm(ss))
}

// uiEvaluate decides the form's resource and scope for the form's user,
// client (by clientId or id), method and organization (as a token's
// organization claim: only the user's assignments there count) as
// /authorize decides them (a "*" resource is every resource defining the
// scope), and shows the form again with the decision and its explanation,
// as the policy evaluation route gives them (Server.explain). An unknown
// user or client is a 404 showing the form with the problem; an undefined
// resource or scope is the engine's ERROR.
func (s *Server) uiEvaluate(w http.ResponseWriter, _ *http.Request, ss *uiSession) {
	p := s.evalForm(ss)
	f := ss.form
	p.Subject, p.Client, p.Resource, p.Scope, p.Method = f.Get("user"), f.Get("client"), f.Get("resource"), f.Get("scope"), f.Get("method")
	p.Organization = f.Get("organization")
	if !slices.Contains(evalMethods, p.Method) {
		p.Problem = "method must be one of " + strings.Join(evalMethods[1:], ", ") + ", or none"
		s.uiRender(w, http.StatusBadRequest, "evaluate", p)
		return
	}
	if p.Subject == "" || p.Client == "" {
		p.Problem = "name a user and a client"
		s.uiRender(w, http.StatusBadRequest, "evaluate", p)
		return
	}
	q := explainQuery{client: p.Client, username: p.Subject, org: p.Organization,
		resources: []decision.Resource{{Name: p.Resource, Scopes: []string{p.Scope}}}, method: p.Method, maxPairs: maxUIRows}
	err := s.liveRealm(ss.realm, func(rm *store.Realm) error {
		ex, err := s.explain(rm, q)
		if err == nil {
			p.Explanation = newUIExplanation(&ex[0])
		}
		return err
	})
	status := http.StatusOK
	if err != nil {
		ae := s.asAPIError(err)
		p.Problem, status = ae.message, ae.status
	}
	s.uiRender(w, status, "evaluate", p)
}

// describeSource says how a role is held, for the pages.
func describeSource(src decision.RoleSource) string {
	switch src.Kind {
	case decision.FromRealmRole:
		return "assigned directly"
	case decision.FromGroup:
		return "through group " + src.Group
	case decision.FromOrganization:
		return "through organization " + src.Organization + " (department " + src.Department + ")"
	case decision.FromTemplate:
		return "from the template of department " + src.Department + " in " + src.Organization
	}
	return string(src.Kind)
}
