package mockserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orgauthz/orgauthz/internal/verbatim"
	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// decisionRoutes registers the authorization-decision-provider endpoints
// (authorize and get-organizations).
func (s *Server) decisionRoutes(m mux) {
	const base = "POST /realms/{realm}/authorization-decision-provider"
	// The hottest route: taken before ServeMux (HandleDirect).
	m.HandleDirect(base+"/authorize", s.authenticatedIn(s.authorize))
	m.Handle(base+"/get-organizations", s.authenticated(s.answered(s.getOrganizations)))
}

// Limits of a decision request.
const (
	maxDecisionResources = 100
	maxDecisionScopes    = 50
)

// authorizeRequest is the body of /authorize. Context is required ({} when
// the call has none); nil means missing or null.
type authorizeRequest struct {
	ClientID  string            `json:"clientId"`
	Resources []resourceRequest `json:"resources"`
	Context   *decisionContext  `json:"context"`
}

// resourceRequest is one resource of an authorize request. A missing, null
// or empty name are one error, so Name needs no pointer to tell them apart.
type resourceRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// decisionContext is the request context: attributes and nothing else.
// The attributes are strings (spec section 4.9); decoding them as such
// refuses any other type with a 400 naming the field. Both objects are
// closed: a member of neither ({"context": {"method": "DELETE"}}, an
// attribute "verb") is a 400 naming it, because ignoring it would decide
// as if the call had no method, a silent DENY where the caller meant a
// method.
type decisionContext struct {
	Attributes *decisionAttributes `json:"attributes"`
}

// decisionAttributes are the context attributes of spec section 4.9.
type decisionAttributes struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Headers string `json:"headers"`
	Body    string `json:"body"`
}

// ClosedJSONObject marks the context closed (strictjson.Closed).
func (decisionContext) ClosedJSONObject() {}

// path is the context's path; "" when there are no attributes.
func (a *decisionAttributes) path() string {
	if a == nil {
		return ""
	}
	return a.Path
}

// ClosedJSONObject marks the attributes closed (strictjson.Closed).
func (decisionAttributes) ClosedJSONObject() {}

// authorizeResponse is the answer of /authorize, as writeDecision writes it.
type authorizeResponse struct {
	Status      decision.Status  `json:"status"`
	Permissions []permissionBody `json:"permissions"`
}

type permissionBody struct {
	Resource string          `json:"resource"`
	Scope    string          `json:"scope"`
	Status   decision.Status `json:"status"`
}

// authorize evaluates the request's resource-scope pairs for the token's
// subject.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, c *caller) {
	if err := checkJSONContentType(r); err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	br := getBodyReader(r.Body)
	defer br.release()
	body, err := br.read()
	if err != nil {
		s.writeErrFor(w, c, errReadBody())
		return
	}
	// A body answered before is valid: its request, parsed, is the
	// entry's (answercache.go); any other is read and checked here.
	cacheable := s.denialLog == nil && len(body) <= maxCachedBody
	var slot *atomic.Pointer[cachedAnswer]
	var hit *cachedAnswer
	if cacheable {
		slot = s.auth.answers.slot(c, body)
		hit = s.auth.answers.lookup(slot, c, body)
	}
	var clientID, method string
	var resources []decision.Resource
	var path string // the context's path, for the denial log
	if hit != nil {
		clientID, resources, method = hit.clientID, hit.resources, hit.method
	} else {
		var req authorizeRequest
		if err := decodeBytes(body, &req); err != nil {
			s.writeErrFor(w, c, err)
			return
		}
		resources, method, err = req.check()
		if err != nil {
			s.writeErrFor(w, c, err)
			return
		}
		clientID, path = req.ClientID, req.Context.Attributes.path()
	}
	// Faults come after the body is read: only then does net/http notice a
	// client that goes away, and so cancel the injected delay.
	if err := s.injectFaults(r.Context()); err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	var answer []byte          // the answer, when cached or to be
	var result decision.Result // the answer, when not
	var fresh *cachedAnswer
	var denial string
	err = s.store.ReadRealm(c.rm, func(rm *store.Realm) error {
		// A cached answer spares the evaluation only: the realm's and the
		// client's checks run on every request, so an answer is never
		// given where they would refuse it (a realm decommissioned since,
		// before its generation moved).
		client, err := decisionClient(rm, clientID)
		if err != nil {
			return err
		}
		gen := rm.Generation()
		if hit != nil && hit.gen == gen {
			answer = hit.answer
			return nil
		}
		sub := s.auth.subjects.Of(rm, c.subject, c.org)
		res := s.auth.policies.Policy(client).Evaluate(sub, resources, method)
		if s.denialLog != nil && res.Status != decision.Grant {
			denial = s.logDenial(rm, client, c, resources, method, path)
		}
		if cacheable {
			answer = appendDecision(nil, res) // the entry's own: it is kept
			fresh = &cachedAnswer{rm: rm, user: c.subject, org: c.org, body: string(body), gen: gen, clientID: clientID,
				resources: resources, method: method, answer: answer}
		} else {
			result = res
		}
		return nil
	})
	if err != nil {
		s.writeErrFor(w, c, err)
		return
	}
	if denial != "" {
		s.denialLog("%s", denial)
	}
	if fresh != nil {
		s.auth.answers.store(slot, fresh)
	}
	if answer == nil {
		writeDecision(w, result)
		return
	}
	writeAnswer(w, answer)
}

// writeDecision writes res as the 200 answer of /authorize, appended into a
// pooled buffer.
func writeDecision(w http.ResponseWriter, res decision.Result) {
	bp := answerBuffers.Get().(*[]byte)
	defer putAnswerBuffer(bp)
	*bp = appendDecision((*bp)[:0], res)
	writeAnswer(w, *bp)
}

// appendDecision appends res, the 200 answer of /authorize, to b. It is
// the server's hottest write and its shape is small and fixed, so it is
// appended by hand instead of by reflection; the bytes are those writeJSON
// writes for the same authorizeResponse.
func appendDecision(b []byte, res decision.Result) []byte {
	size := len(`{"status":"","permissions":[]}`+"\n") + len(res.Status)
	for _, p := range res.Permissions {
		size += len(`{"resource":"","scope":"","status":""},`) + len(p.Resource) + len(p.Scope) + len(p.Status)
	}
	b = slices.Grow(b, size)
	b = append(b, `{"status":`...)
	b = verbatim.AppendJSON(b, string(res.Status))
	b = append(b, `,"permissions":[`...)
	for i, p := range res.Permissions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"resource":`...)
		b = verbatim.AppendJSON(b, p.Resource)
		b = append(b, `,"scope":`...)
		b = verbatim.AppendJSON(b, p.Scope)
		b = append(b, `,"status":`...)
		b = verbatim.AppendJSON(b, string(p.Status))
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// writeAnswer writes b, an answer appendDecision made, with its status and
// headers. b is only read (an io.Writer keeps nothing of it and changes
// none of it), so a cached answer is written as it is.
func writeAnswer(w http.ResponseWriter, b []byte) {
	// Set by their canonical keys (Header.Set canonicalized each key), the
	// two values in one allocation of the answer's own: a header value is
	// the caller's to change in place (a middleware around the server may),
	// so no slice is shared between answers. Declared, a long answer is not
	// sent chunked, and the client can size its buffer at once.
	h := w.Header()
	vals := make([]string, 2)
	vals[0], vals[1] = "application/json", contentLength(len(b))
	h["Content-Type"] = vals[0:1:1]
	h["Content-Length"] = vals[1:2:2]
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// contentLengths are the Content-Length texts of the answers shorter
// than maxSharedLength, made once.
var contentLengths = func() (t [maxSharedLength]string) {
	for n := range t {
		t[n] = strconv.Itoa(n)
	}
	return t
}()

const maxSharedLength = 1024

// contentLength is the Content-Length text of an answer of n bytes.
func contentLength(n int) string {
	if n < maxSharedLength {
		return contentLengths[n]
	}
	return strconv.Itoa(n)
}

// answerBuffers holds the buffers decisions are written into.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer is the largest answer buffer that goes back to the pool.
const maxPooledAnswer = 64 << 10

func putAnswerBuffer(bp *[]byte) {
	if cap(*bp) <= maxPooledAnswer {
		answerBuffers.Put(bp)
	}
}

// check validates the request and returns the
// resources for the engine and the context's method.
func (req *authorizeRequest) check() ([]decision.Resource, string, error) {
	if req.ClientID == "" {
		return nil, "", badField("clientId", "is required")
	}
	out, err := checkResources(req.Resources)
	if err != nil {
		return nil, "", err
	}
	if req.Context == nil {
		return nil, "", badField("context", "must be a JSON object ({} when the call has none)")
	}
	method := ""
	if req.Context.Attributes != nil {
		method = req.Context.Attributes.Method
	}
	return out, method, nil
}

// checkResources validates the resources of a decision request (/authorize
// and the policy evaluation route take the same) and returns them for the
// engine.
func checkResources(rs []resourceRequest) ([]decision.Resource, error) {
	if len(rs) == 0 {
		return nil, &apiError{status: http.StatusBadRequest, message: "the resources array cannot be empty",
			details: []fieldError{{Field: "resources", Message: "the resources array cannot be empty"}}}
	}
	if len(rs) > maxDecisionResources {
		return nil, badField("resources", "at most %d resources per request, got %d", maxDecisionResources, len(rs))
	}
	out := make([]decision.Resource, len(rs))
	for i, rr := range rs {
		if rr.Name == "" {
			return nil, badField(fmt.Sprintf("resources[%d].name", i), "is required")
		}
		if len(rr.Scopes) > maxDecisionScopes {
			return nil, badField(fmt.Sprintf("resources[%d].scopes", i), "at most %d scopes per resource, got %d", maxDecisionScopes, len(rr.Scopes))
		}
		for j, sc := range rr.Scopes {
			if sc == "" {
				return nil, badField(fmt.Sprintf("resources[%d].scopes[%d]", i, j), "must not be empty")
			}
		}
		out[i] = decision.Resource{Name: rr.Name, Scopes: rr.Scopes}
	}
	return out, nil
}

// decisionClient returns the client a decision request names in a live
// realm; an unknown client is a 400.
func decisionClient(rm *store.Realm, clientID string) (*store.Client, error) {
	if rm.Decommissioned() {
		return nil, store.NotFound("realm %q", rm.Name)
	}
	client, ok := rm.ClientNamed(clientID)
	if !ok {
		return nil, badField("clientId", "unknown client %q", clientID)
	}
	return client, nil
}

// getOrganizationsRequest is the body of /get-organizations.
type getOrganizationsRequest struct {
	ClientID string `json:"clientId"`
}

type organizationContext struct {
	Status       bool             `json:"status"`
	Organization organizationBody `json:"organization"`
}

type organizationBody struct {
	UserID  string       `json:"userId"`
	Tenants []tenantBody `json:"tenants"`
}

// tenantBody is one organization of the get-organizations answer.
// Departments is an extension of the specification, whose tenants carry
// only tenantId and tenantName.
type tenantBody struct {
	TenantID    string           `json:"tenantId"`
	TenantName  string           `json:"tenantName"`
	Departments []departmentBody `json:"departments"`
}

type departmentBody struct {
	DepartmentID   string `json:"departmentId"`
	DepartmentName string `json:"departmentName"`
}

// getOrganizations answers the subject's organization context: the
// organizations it is assigned in, sorted by name, each with its
// departments there; for a token limited to one organization (its
// organization claim) that one alone, as /authorize counts it.
func (s *Server) getOrganizations(r *http.Request, c *caller) (any, error) {
	var req getOrganizationsRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.ClientID == "" {
		return nil, badField("clientId", "is required")
	}
	if err := s.injectFaults(r.Context()); err != nil {
		return nil, err
	}
	out := organizationContext{Status: true, Organization: organizationBody{UserID: c.subject, Tenants: []tenantBody{}}}
	err := s.store.Read(c.realm, func(rm *store.Realm) error {
		if _, err := decisionClient(rm, req.ClientID); err != nil {
			return err
		}
		for _, m := range rm.UserOrganizations(c.subject, c.org) {
			t := tenantBody{TenantID: m.Org.ID, TenantName: m.Org.Name, Departments: make([]departmentBody, len(m.Depts))}
			for i, d := range m.Depts {
				t.Departments[i] = departmentBody{DepartmentID: d.ID, DepartmentName: d.Name}
			}
			out.Organization.Tenants = append(out.Organization.Tenants, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// injectFaults applies the fault-injection configuration to a decision
// call: a delay of decisionLatencyMs (cut short when the request is
// cancelled) and, with probability decisionFailureRate, a 503.
func (s *Server) injectFaults(ctx context.Context) error {
	cfg := s.store.Config()
	if cfg.DecisionLatencyMs > 0 {
		t := time.NewTimer(time.Duration(cfg.DecisionLatencyMs) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errf(http.StatusServiceUnavailable, "request cancelled during injected latency")
		}
	}
	if cfg.DecisionFailureRate > 0 && rand.Float64() < cfg.DecisionFailureRate {
		return errf(http.StatusServiceUnavailable, "injected decision failure (decisionFailureRate %g)", cfg.DecisionFailureRate)
	}
	return nil
}
