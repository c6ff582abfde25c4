package mockserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/orgauthz/orgauthz/mockserver/internal/decision"
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
// A subject search pages by cursor: a page walks the realm's user ids in
// order from just after the last id the page before it returned
// (store.Realm.UserIDsAfter), evaluates each, and stops at the first match
// past its limit, which only tells that there is a next page. A page thus
// costs the users it passes (O(log n + users read)), not the realm, and
// paging through every result costs one pass over the users. Its page has
// no total: counting the matches would evaluate every user of the realm,
// the cost the cursor avoids, and AuthZEN 1.0 makes total OPTIONAL. A page
// evaluates at most maxSubjectScan users, under the realm's read lock, and
// stops sooner when its client has gone (its request's context, checked
// every subjectScanCheck users): where matches are rare it ends there,
// with what it found (perhaps nothing) and a next_token that resumes after
// the last user it evaluated, so that no request holds the realm for a
// pass over all its users. Between
// pages, a user who stops matching (or goes) before the cursor changes
// nothing, after it is just not listed; a new match after the cursor is
// listed, before it is not; nothing is listed twice.
//
// Resource and action searches are bounded by the PEP's client (its
// resources, a resource's scopes): each page computes the whole list afresh
// and answers a slice of it at an offset, with the total. A change in
// between may repeat or skip a result, as the specification allows.
//
// page.next_token is opaque: the position of the next page (the cursor id
// or the offset) and an HMAC of it, the realm, the PEP's client, the search
// and a digest of the rest of the request, which must not change while
// paging, under a key of the server's own (pageToken).

// maxSubjectScan is the most users one page of a subject search
// evaluates (Server.subjectScan lowers it in tests), and subjectScanCheck
// how many it evaluates between looks at whether its client has gone.
const (
	maxSubjectScan   = 10_000
	subjectScanCheck = 256
)

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

// azPage is an answer's page; Total is nil for a subject search (see
// above).
type azPage struct {
	NextToken string `json:"next_token"`
	Count     int    `json:"count"`
	Total     *int   `json:"total,omitempty"`
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
	return s.answered(func(r *http.Request, c *caller) (any, error) {
		if err := s.authzenCaller(c); err != nil {
			return nil, err
		}
		var req azSearch
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		if err := req.check(kind); err != nil {
			return nil, err
		}
		maxPage := s.store.Config().MaxPageSize
		limit := maxPage
		if req.Page != nil && req.Page.Limit != nil && *req.Page.Limit > 0 {
			limit = min(*req.Page.Limit, maxPage)
		}
		scope := c.realm + "\x00" + c.clientID + "\x00" + searchNames[kind] + "\x00" + req.digest()
		pos := ""
		if req.Page != nil && req.Page.Token != nil && *req.Page.Token != "" {
			var ok bool
			if pos, ok = readPageToken(s.auth.pageKey, *req.Page.Token, scope); !ok {
				return nil, badField("page.token", "is not a token this server gave for this very request (subject, action, resource, context and page limit must stay as they were)")
			}
		}
		if err := s.injectFaults(r.Context()); err != nil {
			return nil, err
		}
		var (
			out  azSearchAnswer
			next string
		)
		scan := s.subjectScan
		if scan == 0 {
			scan = maxSubjectScan
		}
		err := s.authzenEvaluate(c, "search", func(e *azEvaluator) {
			out, next = e.search(r.Context(), kind, &req.azRequest, pagePos{after: pos, limit: limit, scan: scan})
		})
		if err != nil {
			return nil, err
		}
		if next != "" {
			out.Page.NextToken = pageToken(s.auth.pageKey, scope, next)
		}
		return out, nil
	})
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

// searchNames name the searches in their page tokens' scope.
var searchNames = [...]string{searchSubjects: "subject", searchResources: "resource", searchActions: "action"}

// maxPageToken bounds the page tokens read: the server's own are under 100
// bytes.
const maxPageToken = 256

// pageTokenEncoding encodes the parts of a page token; strict, so that a
// token has one spelling.
var pageTokenEncoding = base64.RawURLEncoding.Strict()

// pageToken is the opaque token of the page at pos (a user id after which
// a subject search resumes, or an offset) of the search scope names (the
// realm, the PEP's client, the search and the request's digest): pos and
// an HMAC of both under the server's own key, so that a token is good only
// for the search it was given for, and only at a position the server gave.
func pageToken(key []byte, scope, pos string) string {
	return pageTokenEncoding.EncodeToString([]byte(pos)) + "." + pageTokenEncoding.EncodeToString(pageMAC(key, scope, pos))
}

// readPageToken returns the position of a token given for the search scope
// names.
func readPageToken(key []byte, token, scope string) (string, bool) {
	p, m, ok := strings.Cut(token, ".")
	if !ok || len(token) > maxPageToken {
		return "", false
	}
	pos, err := pageTokenEncoding.DecodeString(p)
	mac, err2 := pageTokenEncoding.DecodeString(m)
	if err != nil || err2 != nil || len(pos) == 0 || !hmac.Equal(mac, pageMAC(key, scope, string(pos))) {
		return "", false
	}
	return string(pos), true
}

func pageMAC(key []byte, scope, pos string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write([]byte(pos))
	return m.Sum(nil)[:16]
}

// pagePos is the page a search answers: after is its position ("" for the
// first page; a user id or an offset), limit the most results it holds (1
// or more), scan the most users a subject search's page evaluates.
type pagePos struct {
	after string
	limit int
	scan  int
}

// search answers the page pos of a checked search and returns the position
// of the next page, "" after the last. A search of an unknown subject
// type, subject, resource type or action has no results and an error
// context (as an evaluation of them would be false with that error). A
// subject search stops when ctx is done.
func (e *azEvaluator) search(ctx context.Context, kind searchKind, req *azRequest, pos pagePos) (azSearchAnswer, string) {
	var (
		out  = azSearchAnswer{Results: []azResult{}}
		next string
	)
	if kind == searchSubjects {
		var results []azResult
		results, next, out.Context = e.searchSubjects(ctx, req, pos)
		out.Results = append(out.Results, results...)
	} else {
		var all []azResult
		all, out.Context = e.searchAll(kind, req)
		// pos is one this server signed for this search: an offset it
		// wrote.
		offset, _ := strconv.Atoi(pos.after)
		limit := pos.limit
		if offset < len(all) {
			end := min(offset+limit, len(all))
			out.Results = all[offset:end]
			if end < len(all) {
				next = strconv.Itoa(end)
			}
		}
		total := len(all)
		out.Page.Total = &total
	}
	out.Page.Count = len(out.Results)
	return out, next
}

// searchSubjects returns the page of a subject search that starts after
// the user id pos.after ("" for the first page), in id order, and the id
// the next page starts after, "" when no user after the page matches. It
// evaluates the users from there to the first match past the page, or to
// the pos.scan-th user, or until ctx is done, whichever comes first; in the
// last two cases the next page starts after the last user evaluated.
func (e *azEvaluator) searchSubjects(ctx context.Context, req *azRequest, pos pagePos) ([]azResult, string, *azContext) {
	if *req.Subject.Type != authzenSubjectType {
		return nil, "", e.failure("subject type %q is unknown: the subjects are users (type %q)", *req.Subject.Type, authzenSubjectType).Context
	}
	if scopes, _ := e.policy.Scopes(*req.Resource.Type); !slices.Contains(scopes, *req.Action.Name) {
		return nil, "", e.failure("client %q defines no resource type %q with the action %q", e.client.ClientID, *req.Resource.Type, *req.Action.Name).Context
	}
	method, _ := req.Context["method"].(string)
	var (
		out   []azResult
		limit = pos.limit
		read  int    // users evaluated
		last  string // the last of them
	)
	for id := range e.rm.UserIDsAfter(pos.after) {
		if read == pos.scan || read%subjectScanCheck == 0 && read > 0 && ctx.Err() != nil {
			return out, last, nil // more users to read: the next page resumes
		}
		read++
		last = id
		sub := decision.SubjectOf(e.rm, id, "")
		if e.policy.Decide(&sub, *req.Resource.Type, *req.Action.Name, method, req.Resource.Properties) != decision.Grant {
			continue
		}
		if len(out) == limit {
			return out, out[limit-1].ID, nil
		}
		out = append(out, azResult{Type: authzenSubjectType, ID: id})
	}
	return out, "", nil
}

// searchAll returns every result of a checked resource or action search,
// in the client's order, or none and an error context when the subject
// type, the subject or the resource type is unknown.
func (e *azEvaluator) searchAll(kind searchKind, req *azRequest) ([]azResult, *azContext) {
	fail := func(d azDecision) ([]azResult, *azContext) { return nil, d.Context }
	method, _ := req.Context["method"].(string)
	props := req.Resource.Properties
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
			return fail(e.failure("client %q defines no resource type %q", e.client.ClientID, *req.Resource.Type))
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
		return fail(e.failure("client %q defines no resource type %q", e.client.ClientID, *req.Resource.Type))
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
		return decision.Subject{}, e.failure("subject type %q is unknown: the subjects are users (type %q)", *req.Subject.Type, authzenSubjectType), false
	}
	userID := *req.Subject.ID
	if _, ok := e.rm.Users[userID]; !ok {
		id, ok := e.rm.UserByName[userID]
		if !ok {
			return decision.Subject{}, e.failure("no user has the id or username %q", userID), false
		}
		userID = id
	}
	return decision.SubjectOf(e.rm, userID, ""), azDecision{}, true
}
