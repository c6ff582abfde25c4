package mockserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/orgauthz/orgauthz/internal/decision"
)

// The AuthZEN 1.0 Search APIs over the realm's decision engine
// (docs/reference-server.md, "AuthZEN"). Every result is one that the
// Access Evaluation API, asked at once with it filled in, allows:
//
//	subject search   the users of the realm (ordered by id) allowed the
//	                 action on the resource
//	resource search  the resources of the PEP's client (in the client's
//	                 order) on which the subject may do the action:
//	                 resource.type names one, or is "*" for all; a
//	                 result is {type} (the engine decides per type, for
//	                 every instance id)
//	action search    the scopes of the resource (in the client's order)
//	                 the subject may do
//
// Pages are slices of the ordered results; page.token is opaque (an offset
// and a digest of the rest of the request, which must not change while
// paging). The results are computed afresh for each page, so a change in
// between may repeat or skip a result, as the specification allows.

// searchKind is what a search returns.
type searchKind int

const (
	searchSubjects searchKind = iota
	searchResources
	searchActions
)

// azSearch is a Search API request.
type azSearch struct {
	azRequest
	Page *azPageRequest `json:"page"`
}

type azPageRequest struct {
	Token      *string        `json:"token"`
	Limit      *int           `json:"limit"`
	Properties map[string]any `json:"properties"`
}

// azSearchAnswer is a Search API answer; page comes first, as the
// specification recommends.
type azSearchAnswer struct {
	Page    azPage     `json:"page"`
	Context *azContext `json:"context,omitempty"`
	Results []azResult `json:"results"`
}

type azPage struct {
	NextToken string `json:"next_token"`
	Count     int    `json:"count"`
	Total     int    `json:"total"`
}

// azResult is a subject {type, id}, a resource {type} or an action {name}.
type azResult struct {
	Type string `json:"type,omitempty"`
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

func (s *Server) authzenSearchRoutes(m mux) {
	m.Handle("POST /realms/{realm}/access/v1/search/subject", s.authenticated(s.searchHandler(searchSubjects)))
	m.Handle("POST /realms/{realm}/access/v1/search/resource", s.authenticated(s.searchHandler(searchResources)))
	m.Handle("POST /realms/{realm}/access/v1/search/action", s.authenticated(s.searchHandler(searchActions)))
}

func (s *Server) searchHandler(kind searchKind) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		if err := s.authzenCaller(c); err != nil {
			writeErr(w, err)
			return
		}
		var req azSearch
		if err := decodeBody(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		if err := req.check(kind); err != nil {
			writeErr(w, err)
			return
		}
		maxPage := s.store.Config().MaxPageSize
		limit := maxPage
		if req.Page != nil && req.Page.Limit != nil && *req.Page.Limit > 0 {
			limit = min(*req.Page.Limit, maxPage)
		}
		scope := c.realm + "\x00" + c.clientID + "\x00" + req.digest()
		offset := 0
		if req.Page != nil && req.Page.Token != nil && *req.Page.Token != "" {
			var ok bool
			if offset, ok = readPageToken(s.auth.pageKey, *req.Page.Token, scope); !ok {
				writeErr(w, badField("page.token", "is not a token this server gave for this very request (subject, action, resource, context and page limit must stay as they were)"))
				return
			}
		}
		if err := s.injectFaults(r.Context()); err != nil {
			writeErr(w, err)
			return
		}
		var all []azResult
		var fail *azContext
		err := s.authzenEvaluate(c, func(e *azEvaluator) { all, fail = e.search(kind, &req.azRequest) })
		if err != nil {
			writeErr(w, err)
			return
		}
		out := azSearchAnswer{Context: fail, Results: []azResult{}, Page: azPage{Total: len(all)}}
		if offset < len(all) {
			end := min(offset+limit, len(all))
			out.Results = all[offset:end]
			if end < len(all) {
				out.Page.NextToken = pageToken(s.auth.pageKey, scope, end)
			}
		}
		out.Page.Count = len(out.Results)
		writeJSON(w, http.StatusOK, out)
	}
}

// check refuses a search that lacks what its kind needs (empty strings
// included): the searched entity needs only its type (its id is ignored),
// the action search has no action, and a page limit is not negative.
func (req *azSearch) check(kind searchKind) error {
	missing := func(p *string) bool { return p == nil || *p == "" }
	switch {
	case req.Subject == nil:
		return badField("subject", "is required")
	case missing(req.Subject.Type):
		return badField("subject.type", "is required")
	case kind != searchSubjects && missing(req.Subject.ID):
		return badField("subject.id", "is required")
	case kind != searchActions && req.Action == nil:
		return badField("action", "is required")
	case kind != searchActions && missing(req.Action.Name):
		return badField("action.name", "is required")
	case req.Resource == nil:
		return badField("resource", "is required")
	case missing(req.Resource.Type):
		return badField("resource.type", "is required")
	case kind != searchResources && missing(req.Resource.ID):
		return badField("resource.id", "is required")
	case req.Page != nil && req.Page.Limit != nil && *req.Page.Limit < 0:
		return badField("page.limit", "must be 0 or more")
	}
	return nil
}

// digest identifies a search apart from its page token: encoding/json
// writes map keys sorted, so equal requests give equal digests.
func (req *azSearch) digest() string {
	q := *req
	if q.Page != nil {
		p := *q.Page
		p.Token = nil
		q.Page = &p
	}
	b, _ := json.Marshal(q) // decoded from JSON, so it encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// pageToken is the opaque token of the page that starts at offset of the
// search scope names (the realm, the PEP's client and the request's
// digest): the offset and an HMAC of both under the server's own key, so
// that a token is good only for the search it was given for, and only at
// an offset the server gave.
func pageToken(key []byte, scope string, offset int) string {
	o := strconv.Itoa(offset)
	return o + "." + base64.RawURLEncoding.EncodeToString(pageMAC(key, scope, o))
}

// readPageToken returns the offset of a token given for the search scope
// names.
func readPageToken(key []byte, token, scope string) (int, bool) {
	o, mac, ok := strings.Cut(token, ".")
	if !ok || len(o) > 10 {
		return 0, false
	}
	offset, err := strconv.Atoi(o)
	got, err2 := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || err2 != nil || offset <= 0 || strconv.Itoa(offset) != o || !hmac.Equal(got, pageMAC(key, scope, o)) {
		return 0, false
	}
	return offset, true
}

func pageMAC(key []byte, scope, offset string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write([]byte(offset))
	return m.Sum(nil)[:16]
}

// search returns every result of a checked search, in order, or none and
// an error context when the subject type, the subject, the resource type
// or the action is unknown (as an evaluation of them would be false with
// that error).
func (e *azEvaluator) search(kind searchKind, req *azRequest) ([]azResult, *azContext) {
	fail := func(d azDecision) ([]azResult, *azContext) { return nil, d.Context }
	method, _ := req.Context["method"].(string)
	props := req.Resource.Properties
	switch kind {
	case searchSubjects:
		if *req.Subject.Type != authzenSubjectType {
			return fail(azFailure("subject type %q is unknown: the subjects are users (type %q)", *req.Subject.Type, authzenSubjectType))
		}
		if scopes, _ := e.policy.Scopes(*req.Resource.Type); !slices.Contains(scopes, *req.Action.Name) {
			return fail(azFailure("client %q defines no resource type %q with the action %q", e.client.ClientID, *req.Resource.Type, *req.Action.Name))
		}
		ids := make([]string, 0, len(e.rm.Users))
		for id := range e.rm.Users {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var out []azResult
		for _, id := range ids {
			sub := decision.SubjectOf(e.rm, id, "")
			if e.policy.Decide(&sub, *req.Resource.Type, *req.Action.Name, method, props) == decision.Grant {
				out = append(out, azResult{Type: authzenSubjectType, ID: id})
			}
		}
		return out, nil
	}
	sub, d, ok := e.subject(req)
	if !ok {
		return fail(d)
	}
	var out []azResult
	if kind == searchResources {
		types := []string{*req.Resource.Type}
		if *req.Resource.Type == decision.Wildcard {
			types = e.policy.Resources()
		} else if _, ok := e.policy.Scopes(*req.Resource.Type); !ok {
			return fail(azFailure("client %q defines no resource type %q", e.client.ClientID, *req.Resource.Type))
		}
		for _, t := range types {
			if e.policy.Decide(&sub, t, *req.Action.Name, method, props) == decision.Grant {
				out = append(out, azResult{Type: t})
			}
		}
		return out, nil
	}
	scopes, ok := e.policy.Scopes(*req.Resource.Type)
	if !ok {
		return fail(azFailure("client %q defines no resource type %q", e.client.ClientID, *req.Resource.Type))
	}
	for _, sc := range scopes {
		if e.policy.Decide(&sub, *req.Resource.Type, sc, method, props) == decision.Grant {
			out = append(out, azResult{Name: sc})
		}
	}
	return out, nil
}

// subject returns the engine's subject for a request's user subject, or
// the failed decision an evaluation of it would be.
func (e *azEvaluator) subject(req *azRequest) (decision.Subject, azDecision, bool) {
	if *req.Subject.Type != authzenSubjectType {
		return decision.Subject{}, azFailure("subject type %q is unknown: the subjects are users (type %q)", *req.Subject.Type, authzenSubjectType), false
	}
	userID := *req.Subject.ID
	if _, ok := e.rm.Users[userID]; !ok {
		id, ok := e.rm.UserByName[userID]
		if !ok {
			return decision.Subject{}, azFailure("no user has the id or username %q", userID), false
		}
		userID = id
	}
	return decision.SubjectOf(e.rm, userID, ""), azDecision{}, true
}
