package mockserver

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// This file answers "why was this denied?": the policy evaluation route
// (Keycloak's, for a realm administrator), ExplainDecision for tests, and
// the denial log of WithDenialLog. Each explains with decision's
// Policy.Explain, the code that decides /authorize, never a second opinion.

// explainRoutes registers the policy evaluation route.
func (s *Server) explainRoutes(m mux) {
	m.Handle("POST /admin/realms/{realm}/clients/{client}/authz/resource-server/policy/evaluate", s.realmAdmin("", s.answered(s.evaluatePolicy)))
}

// evaluateRequest is the body of the policy evaluation route: the subject
// by userId or username (one of them), the resources as /authorize takes
// them, and an optional context.
type evaluateRequest struct {
	UserID    string            `json:"userId"`
	Username  string            `json:"username"`
	Resources []resourceRequest `json:"resources"`
	Context   *evaluateContext  `json:"context"`
}

// evaluateContext is /authorize's context plus the organization claim the
// decision is made under (a token's organization claim: an id or alias).
type evaluateContext struct {
	Attributes   *decisionAttributes `json:"attributes"`
	Organization string              `json:"organization"`
}

// ClosedJSONObject marks the body closed (strictjson.Closed): a misspelt
// member would explain another decision than the one asked about.
func (evaluateRequest) ClosedJSONObject() {}

// ClosedJSONObject marks the context closed (strictjson.Closed).
func (evaluateContext) ClosedJSONObject() {}

// evaluatePolicy explains the decision the body describes, for the client
// the path names (by clientId or id): 200 with the explanation, 404 for an
// unknown client or user.
func (s *Server) evaluatePolicy(r *http.Request, c *caller) (any, error) {
	var req evaluateRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	q, err := req.query(r.PathValue("client"))
	if err != nil {
		return nil, err
	}
	var out decision.Explanation
	err = s.store.Read(c.realm, func(rm *store.Realm) error {
		ex, err := s.explain(rm, q)
		if err == nil {
			out = ex[0]
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// query checks the body and returns the decision it asks about.
func (req *evaluateRequest) query(client string) (explainQuery, error) {
	q := explainQuery{client: client, userID: req.UserID, username: req.Username}
	switch {
	case req.UserID == "" && req.Username == "":
		return q, badField("userId", "userId or username is required")
	case req.UserID != "" && req.Username != "":
		return q, badField("username", "give userId or username, not both")
	}
	res, err := checkResources(req.Resources)
	if err != nil {
		return q, err
	}
	q.resources = res
	if req.Context != nil {
		q.org = req.Context.Organization
		if a := req.Context.Attributes; a != nil {
			q.method, q.path = a.Method, a.Path
		}
	}
	return q, nil
}

// explainQuery is a decision to explain. An empty client means every client
// of the realm that defines the first resource.
type explainQuery struct {
	client           string // clientId or id
	userID, username string // one of them
	org              string
	resources        []decision.Resource
	method, path     string
	// strict refuses (store.NotFound) a named client that does not define
	// the first resource, as the unnamed case always does: ExplainDecision
	// sets it. Without it the engine explains the pair as ERROR, as
	// /authorize decides it (the policy evaluation route, the UI).
	strict bool
	// maxPairs bounds the pairs explained (decision.Request.MaxPairs; 0:
	// every pair): the web UI's.
	maxPairs int
}

// explain explains q in rm, once per client it names (one, or each that
// defines q's resource): a store.NotFound error for an unknown client or
// user, when no client defines the resource, or (q.strict) when the named
// client does not. Whether a client defines the resource is one test,
// definesResource, whether a client is named or not.
func (s *Server) explain(rm *store.Realm, q explainQuery) ([]decision.Explanation, error) {
	if rm.Decommissioned() {
		return nil, store.NotFound("realm %q", rm.Name)
	}
	userID := q.userID
	if q.username != "" {
		id, ok := rm.UserByName[q.username]
		if !ok {
			return nil, store.NotFound("user %q in realm %q", q.username, rm.Name)
		}
		userID = id
	} else if _, ok := rm.Users[userID]; !ok {
		return nil, store.NotFound("user id %q in realm %q", userID, rm.Name)
	}
	var clients []*store.Client
	if q.client != "" {
		cl, ok := rm.ClientNamed(q.client)
		if !ok {
			if cl, ok = rm.Clients[q.client]; !ok {
				return nil, store.NotFound("client %q in realm %q (by clientId or id)", q.client, rm.Name)
			}
		}
		if q.strict && !s.definesResource(cl, q.resources[0].Name) {
			return nil, store.NotFound("resource %q on client %q of realm %q", q.resources[0].Name, cl.ClientID, rm.Name)
		}
		clients = append(clients, cl)
	} else {
		for _, cl := range rm.Clients {
			if s.definesResource(cl, q.resources[0].Name) {
				clients = append(clients, cl)
			}
		}
		if len(clients) == 0 {
			return nil, store.NotFound("a client of realm %q that defines resource %q", rm.Name, q.resources[0].Name)
		}
		slices.SortFunc(clients, func(a, b *store.Client) int { return cmp.Compare(a.ClientID, b.ClientID) })
	}
	out := make([]decision.Explanation, len(clients))
	for i, cl := range clients {
		out[i] = s.auth.policies.Policy(cl).Explain(rm, decision.Request{UserID: userID, Organization: q.org,
			Resources: q.resources, Method: q.method, Path: q.path, MaxPairs: q.maxPairs})
		out[i].Client = cl.ClientID
	}
	return out, nil
}

// definesResource reports whether cl defines the resource name, or, for
// "*", any resource.
func (s *Server) definesResource(cl *store.Client, name string) bool {
	p := s.auth.policies.Policy(cl)
	_, defines := p.Scopes(name)
	return defines || name == decision.Wildcard && len(p.Resources()) > 0
}

// DecisionQuery is a decision for ExplainDecision to explain: the
// subject, the pairs and the request context.
type DecisionQuery struct {
	// Client is the client's clientId (or internal id). Empty: every
	// client of the realm that defines Resource, each explained in turn.
	Client string
	// User is the subject's username (or, when no user has that name, its
	// user id).
	User string
	// Resource is the resource asked about, and Scopes its scopes; no
	// Scopes means every scope defined on it, "*" every resource.
	Resource string
	Scopes   []string
	// Method and Path are the request context's (/authorize's
	// context.attributes); no permission reads Path.
	Method, Path string
	// Organization is the token's organization claim, an organization's id
	// or alias: only assignments there count. Empty: every assignment.
	Organization string
}

// ExplainDecision explains the decision q describes in realm, as the
// policy evaluation route does, as text for a person (see the package
// documentation, "Why was this denied?"): the status, each pair with its
// reason, every permission that applies to a pair that is not GRANT with
// the facts it matched or missed, and the subject's roles with their
// sources. It fails with an error that names what is unknown: the realm,
// the client, the user, or the resource (a Client that does not define
// Resource, or, without Client, no client defining it); an undefined scope
// is explained, its pair ERROR.
// It is safe for concurrent use.
func (s *Server) ExplainDecision(realm string, q DecisionQuery) (string, error) {
	if q.User == "" || q.Resource == "" {
		return "", errors.New("mockserver: ExplainDecision: User and Resource are required")
	}
	eq := explainQuery{client: q.Client, username: q.User, org: q.Organization, method: q.Method, path: q.Path,
		resources: []decision.Resource{{Name: q.Resource, Scopes: q.Scopes}}, strict: true}
	var text string
	err := s.store.Read(realm, func(rm *store.Realm) error {
		if _, ok := rm.UserByName[q.User]; !ok {
			if _, ok := rm.Users[q.User]; ok {
				eq.username, eq.userID = "", q.User
			}
		}
		ex, err := s.explain(rm, eq)
		for i := range ex {
			if i > 0 {
				text += "\n"
			}
			text += ex[i].Text()
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("mockserver: ExplainDecision: %w", err)
	}
	return text, nil
}

// logDenial writes, when a denial log is set, the explanation of a
// decision of /authorize that was not GRANT: decided again with the
// explaining tracer inside the same read of the realm, so it sees what the
// decision saw.
func (s *Server) logDenial(rm *store.Realm, client *store.Client, c *caller, resources []decision.Resource, method, path string) string {
	ex := s.auth.policies.Policy(client).Explain(rm, decision.Request{UserID: c.subject, Organization: c.org,
		Resources: resources, Method: method, Path: path})
	ex.Client = client.ClientID
	ex = sayableExplanation(ex, realmKnows(rm))
	return fmt.Sprintf("mockserver: POST /realms/%s/authorization-decision-provider/authorize: %s", rm.Name, ex.Text())
}

// sayableExplanation returns ex, an explanation a log line is written
// from, with each value the request gave kept by the errors' rule (keep):
// the method, each segment of the path, each pair's resource and scope
// (and its reason, through sayable), a method check's method and an
// ownership check's value. A log is a channel that keeps request data as
// an error is (a-server14 F2): a PEP that sends a credential where a
// resource's name goes must not find it in the server's log. The names
// the realm defines (known: its clients' resources and scopes) and ids
// are kept, so the line still reads. ex itself is not changed.
func sayableExplanation(ex decision.Explanation, known knower) decision.Explanation {
	known = budgeted(known)
	if w, ok := methodWord(ex.Method).(said); ok {
		ex.Method = string(w)
	} else {
		ex.Method = keep(ex.Method, known)
	}
	if ex.Path != "" {
		ex.Path = sayablePath(ex.Path, known)
	}
	pairs := make([]decision.PairExplanation, len(ex.Pairs))
	for i, pe := range ex.Pairs {
		pe.Resource, pe.Scope = keep(pe.Resource, known), keep(pe.Scope, known)
		pe.Reason = sayableBudgeted(pe.Reason, known)
		checks := make([]decision.PermissionCheck, len(pe.Permissions))
		for j, pc := range pe.Permissions {
			if pc.Method != nil {
				m := *pc.Method
				if w, ok := methodWord(m.Method).(said); ok {
					m.Method = string(w)
				} else {
					m.Method = keep(m.Method, known)
				}
				pc.Method = &m
			}
			if pc.Owner != nil {
				o := *pc.Owner
				o.Value = keep(o.Value, known)
				pc.Owner = &o
			}
			checks[j] = pc
		}
		pe.Permissions = checks
		pairs[i] = pe
	}
	ex.Pairs = pairs
	return ex
}
