package mockserver

import (
	"fmt"
	"net/http"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// The OpenID AuthZEN Authorization API 1.0 over the realm's own decision
// engine, an extension of the service specification
// (docs/reference-server.md, "AuthZEN"). The PEP is a client of the realm
// that authenticates with its service account's token (client_credentials,
// Bearer or DPoP); it asks about its own resources:
//
//	subject  {type: "user", id: a user id, else a username}
//	action   {name: a scope}
//	resource {type: a resource of the PEP's client, id: the instance,
//	          properties: read by permissions with an ownerProperty}
//	context  {method: read by permissions limited to methods}

// authzenRoutes registers the AuthZEN endpoints and their metadata, at the
// realm's path and at the path the AuthZEN specification derives from the
// PDP identifier (the well-known segment between host and path, as
// RFC 8414 does), which is where AuthZEN clients look.
func (s *Server) authzenRoutes(m mux) {
	m.Handle("POST /realms/{realm}/access/v1/evaluation", s.authenticated(s.answered(s.accessEvaluation)))
	m.Handle("POST /realms/{realm}/access/v1/evaluations", s.authenticated(s.answered(s.accessEvaluations)))
	s.authzenSearchRoutes(m)
	m.HandleFunc("GET /realms/{realm}/.well-known/authzen-configuration", s.live(s.apiFail, s.authzenMetadata))
	m.HandleFunc("GET /.well-known/authzen-configuration/realms/{realm}", s.live(s.apiFail, s.authzenMetadata))
}

// maxEvaluations bounds the items of one Access Evaluations request, as
// maxDecisionResources bounds a decision request.
const maxEvaluations = 100

// authzenSubjectType is the one subject type the reference server knows.
const authzenSubjectType = "user"

// azEntity is an AuthZEN subject or resource; nil members are missing.
type azEntity struct {
	Type       *string        `json:"type"`
	ID         *string        `json:"id"`
	Properties map[string]any `json:"properties"`
}

// azAction is an AuthZEN action.
type azAction struct {
	Name       *string        `json:"name"`
	Properties map[string]any `json:"properties"`
}

// azRequest is an Access Evaluation request, or a batch item (whose
// missing members come from the batch's).
type azRequest struct {
	Subject  *azEntity      `json:"subject"`
	Action   *azAction      `json:"action"`
	Resource *azEntity      `json:"resource"`
	Context  map[string]any `json:"context"`
}

// azBatch is an Access Evaluations request.
type azBatch struct {
	azRequest
	Options     *azOptions  `json:"options"`
	Evaluations []azRequest `json:"evaluations"`
}

type azOptions struct {
	Semantic *string `json:"evaluations_semantic"`
}

// azDecision is one answer: the decision, and a context only when the
// evaluation failed (an error object, AuthZEN 1.0's shape).
type azDecision struct {
	Decision bool       `json:"decision"`
	Context  *azContext `json:"context,omitempty"`
}

type azContext struct {
	Error azError `json:"error"`
}

type azError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

type azDecisions struct {
	Evaluations []azDecision `json:"evaluations"`
}

// The evaluations semantics of AuthZEN 1.0.
const (
	semanticExecuteAll          = "execute_all"
	semanticDenyOnFirstDeny     = "deny_on_first_deny"
	semanticPermitOnFirstPermit = "permit_on_first_permit"
)

// authzenMetadata is the PDP metadata of a realm.
type authzenMetadataBody struct {
	PDP            string `json:"policy_decision_point"`
	Evaluation     string `json:"access_evaluation_endpoint"`
	Evaluations    string `json:"access_evaluations_endpoint"`
	SearchSubject  string `json:"search_subject_endpoint"`
	SearchResource string `json:"search_resource_endpoint"`
	SearchAction   string `json:"search_action_endpoint"`
}

// authzenMetadata serves the realm's PDP metadata: the PDP identifier is
// the realm's issuer URL, and the endpoints are under it.
func (s *Server) authzenMetadata(w http.ResponseWriter, r *http.Request, realm string) {
	pdp := issuer.RealmIssuer(s.issuerBase(r), realm)
	writeJSON(w, http.StatusOK, authzenMetadataBody{PDP: pdp,
		Evaluation: pdp + "/access/v1/evaluation", Evaluations: pdp + "/access/v1/evaluations",
		SearchSubject: pdp + "/access/v1/search/subject", SearchResource: pdp + "/access/v1/search/resource",
		SearchAction: pdp + "/access/v1/search/action"})
}

// accessEvaluation answers the Access Evaluation API.
func (s *Server) accessEvaluation(r *http.Request, c *caller) (any, error) {
	if err := s.authzenCaller(c); err != nil {
		return nil, err
	}
	var req azRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := req.check(""); err != nil {
		return nil, err
	}
	if err := s.injectFaults(r.Context()); err != nil {
		return nil, err
	}
	var out azDecision
	err := s.authzenEvaluate(c, "evaluation", func(e *azEvaluator) { out = e.decide(&req) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// accessEvaluations answers the Access Evaluations API: each item
// completed from the request's own subject, action, resource and context,
// evaluated in order until the semantic says stop. With no items it is the
// Access Evaluation API, as AuthZEN 1.0 says.
func (s *Server) accessEvaluations(r *http.Request, c *caller) (any, error) {
	if err := s.authzenCaller(c); err != nil {
		return nil, err
	}
	var req azBatch
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	semantic := semanticExecuteAll
	if req.Options != nil && req.Options.Semantic != nil {
		semantic = *req.Options.Semantic
		switch semantic {
		case semanticExecuteAll, semanticDenyOnFirstDeny, semanticPermitOnFirstPermit:
		default:
			return nil, badField("options.evaluations_semantic", "must be %s, %s or %s", said(semanticExecuteAll), said(semanticDenyOnFirstDeny), said(semanticPermitOnFirstPermit))
		}
	}
	if len(req.Evaluations) > maxEvaluations {
		return nil, badField("evaluations", "at most %d evaluations per request, got %d", maxEvaluations, len(req.Evaluations))
	}
	single := len(req.Evaluations) == 0
	items := make([]azRequest, max(len(req.Evaluations), 1))
	if single {
		items[0] = req.azRequest
	}
	for i, it := range req.Evaluations {
		items[i] = req.merge(it)
	}
	for i := range items {
		prefix := ""
		if !single {
			prefix = fmt.Sprintf("evaluations[%d].", i)
		}
		if err := items[i].check(prefix); err != nil {
			return nil, err
		}
	}
	if err := s.injectFaults(r.Context()); err != nil {
		return nil, err
	}
	out := azDecisions{Evaluations: make([]azDecision, 0, len(items))}
	err := s.authzenEvaluate(c, "evaluations", func(e *azEvaluator) {
		for i := range items {
			d := e.decide(&items[i])
			out.Evaluations = append(out.Evaluations, d)
			if semantic == semanticDenyOnFirstDeny && !d.Decision || semantic == semanticPermitOnFirstPermit && d.Decision {
				break
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if single {
		return out.Evaluations[0], nil
	}
	return out, nil
}

// merge completes item from the batch's own members: each of subject,
// action, resource and context the item lacks is the batch's, whole.
func (b *azBatch) merge(item azRequest) azRequest {
	if item.Subject == nil {
		item.Subject = b.Subject
	}
	if item.Action == nil {
		item.Action = b.Action
	}
	if item.Resource == nil {
		item.Resource = b.Resource
	}
	if item.Context == nil {
		item.Context = b.Context
	}
	return item
}

// check refuses a request that lacks a subject type or id, an action name
// or a resource type or id (empty strings included); prefix names the
// batch item in the 400.
func (req *azRequest) check(prefix string) error {
	missing := func(p *string) bool { return p == nil || *p == "" }
	switch {
	case req.Subject == nil:
		return badField(prefix+"subject", "is required")
	case missing(req.Subject.Type):
		return badField(prefix+"subject.type", "is required")
	case missing(req.Subject.ID):
		return badField(prefix+"subject.id", "is required")
	case req.Action == nil:
		return badField(prefix+"action", "is required")
	case missing(req.Action.Name):
		return badField(prefix+"action.name", "is required")
	case req.Resource == nil:
		return badField(prefix+"resource", "is required")
	case missing(req.Resource.Type):
		return badField(prefix+"resource.type", "is required")
	case missing(req.Resource.ID):
		return badField(prefix+"resource.id", "is required")
	}
	return nil
}

// authzenCaller refuses (403) a token that is not the service account of
// its own client: the PEP asks as a client, about that client's resources.
func (s *Server) authzenCaller(c *caller) error {
	return s.store.Read(c.realm, func(rm *store.Realm) error {
		if rm.Decommissioned() {
			return store.NotFound("realm %q", rm.Name)
		}
		if cl, ok := rm.ClientNamed(c.clientID); !ok || cl.ServiceAccountUserID == "" || cl.ServiceAccountUserID != c.subject {
			return errf(http.StatusForbidden, "the AuthZEN API answers a client's service account (a client_credentials token); this token is not one")
		}
		return nil
	})
}

// azEvaluator decides AuthZEN requests for the PEP's client in one realm,
// under the realm's read lock.
type azEvaluator struct {
	rm     *store.Realm
	client *store.Client
	policy *decision.Policy
	// denials collects the explanation of each denial when the server has
	// a denial log (WithDenialLog); nil otherwise.
	denials *[]string
}

// authzenEvaluate runs fn with an evaluator of the caller's client, then
// writes the explanations of its denials to the denial log, if any (route
// names the route in the log).
func (s *Server) authzenEvaluate(c *caller, route string, fn func(*azEvaluator)) error {
	var denials []string
	err := s.store.Read(c.realm, func(rm *store.Realm) error {
		client, err := decisionClient(rm, c.clientID)
		if err != nil {
			return err
		}
		e := &azEvaluator{rm: rm, client: client, policy: s.auth.policies.Policy(client)}
		if s.denialLog != nil {
			e.denials = &denials
		}
		fn(e)
		return nil
	})
	for _, d := range denials {
		s.denialLog("mockserver: POST /realms/%s/access/v1/%s: %s", c.realm, route, d)
	}
	return err
}

// decide answers one checked request. A subject that is not a user of the
// realm, and a resource type or action the client does not define, are
// denials whose context carries an error (404); the engine decides the
// rest.
func (e *azEvaluator) decide(req *azRequest) azDecision {
	sub, d, ok := e.subject(req)
	if !ok {
		if e.denials != nil {
			*e.denials = append(*e.denials, "DENY: "+d.Context.Error.Message)
		}
		return d
	}
	method, _ := req.Context["method"].(string)
	st := e.policy.Decide(&sub, *req.Resource.Type, *req.Action.Name, method, req.Resource.Properties)
	if st != decision.Grant && e.denials != nil {
		ex := e.policy.Explain(e.rm, decision.Request{UserID: sub.UserID, ByPair: true, Method: method, Properties: req.Resource.Properties,
			Resources: []decision.Resource{{Name: *req.Resource.Type, Scopes: []string{*req.Action.Name}}}})
		ex.Client = e.client.ClientID
		ex = sayableExplanation(ex, e.publicName)
		*e.denials = append(*e.denials, ex.Text())
	}
	switch st {
	case decision.Grant:
		return azDecision{Decision: true}
	case decision.Error:
		return e.failure("client %q defines no resource type %q with the action %q", e.client.ClientID, *req.Resource.Type, *req.Action.Name)
	}
	return azDecision{}
}

// azFailure is a denial whose context carries an error (404): what was
// asked about is unknown. The message repeats only what sayable lets it.
func (e *azEvaluator) failure(format string, args ...any) azDecision {
	return azDecision{Context: &azContext{Error: azError{Status: http.StatusNotFound, Message: sayable(fmt.Sprintf(format, args...), e.publicName)}}}
}

// publicName is the evaluator's knower (echo.go): a name its realm
// publishes or the id of an object it holds, read under the realm's read
// lock the evaluation holds.
func (e *azEvaluator) publicName(v string) bool { return e.rm.PublicName(v) || e.rm.HoldsID(v) }
