package authzen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/strictjson"
	"github.com/orgauthz/orgauthz/internal/telemetry"
)

// The bounds of one search, all pages together. A PDP that goes past one
// makes the search fail: the client never loops without end nor holds
// more than these.
const (
	// MaxSearchPages is the most pages one search reads.
	MaxSearchPages = 100
	// DefaultMaxSearchResults is the most results one search returns
	// unless WithMaxResults says otherwise.
	DefaultMaxSearchResults = 10_000
	// MaxSearchBytes bounds what the results of one search hold: the
	// bytes of their types, ids, names and the JSON of their properties.
	MaxSearchBytes = 4 << 20
	// maxSearchProperties bounds the JSON of the results' properties,
	// which is decoded into maps, as one answer's body is bounded.
	maxSearchProperties = 1 << 20
	// maxPageToken bounds a page token (the client keeps every token of a
	// search to see a loop).
	maxPageToken = 4 << 10
)

// SearchOption changes one search call.
type SearchOption interface {
	applySearch(*searchConfig)
}

type searchConfig struct {
	pageLimit  int
	maxResults int
}

type searchOption func(*searchConfig)

func (f searchOption) applySearch(c *searchConfig) { f(c) }

// WithPageLimit asks the PDP for at most n results per page (page.limit);
// 0, the default, leaves the page size to the PDP. A negative n makes the
// search fail with ErrInvalidArgument. However small the pages, one search
// reads at most MaxSearchPages of them.
func WithPageLimit(n int) SearchOption {
	return searchOption(func(c *searchConfig) { c.pageLimit = n })
}

// WithMaxResults sets the most results one search may return (default
// DefaultMaxSearchResults); a PDP that returns more makes the search fail.
// n must be at least 1 (the search fails with ErrInvalidArgument
// otherwise); however large, the results stay within MaxSearchBytes.
func WithMaxResults(n int) SearchOption {
	return searchOption(func(c *searchConfig) { c.maxResults = n })
}

// SearchSubject asks the PDP's Subject Search API which subjects of type
// req.Subject.Type may perform req.Action on req.Resource (req.Subject.ID
// is not sent), and returns them all, following the PDP's pages.
//
// A search is not a decision: its results grant nothing by themselves, and
// a caller enforcing access must still call Evaluate (the PDP's answers
// may change between the two, and the specification does not promise
// they agree). It does not fail closed with an empty list either: on any
// fault it returns an error and no results, never part of them. The
// errors are those of Evaluate's Causes and errors: ErrInvalidArgument
// (nothing sent), ErrNoToken, ErrDiscovery (also when the PDP names no
// such endpoint), ErrUnavailable and ErrCircuitOpen, a *ResponseError for
// any status but 200 (redirects included; a 401 matches ErrUnauthorized,
// or ErrProofRejected when it blames the DPoP proof, and is handled as
// Evaluate handles it) or for an answer that is not
// strictly a search answer (ErrMalformedResponse): a member named twice or
// in another case, a value of the wrong type, trailing data, a result
// without a type, a page count that is not the number of results, a page
// token seen before in the search, more than MaxSearchPages pages, more
// results than WithMaxResults allows or more than MaxSearchBytes held.
//
// The search, every page, is bounded by the client's timeout and ctx, and
// uses the client's credential, retries and circuit breaker. Results are
// not cached.
func (c *Client) SearchSubject(ctx context.Context, req Request, opts ...SearchOption) ([]Subject, error) {
	return searchFor(ctx, c, searchSubject, req, func(w *wireRequest) { w.Subject.ID = "" }, opts,
		req.Subject.Type == "" || req.Action.Name == "" || req.Resource.Type == "" || req.Resource.ID == "",
		"a subject search needs a subject type, an action name and a resource type and id",
		func(e entity) Subject { return Subject{Type: e.Type, ID: e.ID, Properties: e.Properties} })
}

// SearchResource asks the PDP's Resource Search API which resources of
// type req.Resource.Type req.Subject may perform req.Action on
// (req.Resource.ID is not sent), and returns them all, following the
// PDP's pages. The rules are SearchSubject's: the results grant nothing by
// themselves (Evaluate before enforcing), and any fault is an error with
// no results.
func (c *Client) SearchResource(ctx context.Context, req Request, opts ...SearchOption) ([]Resource, error) {
	return searchFor(ctx, c, searchResource, req, func(w *wireRequest) { w.Resource.ID = "" }, opts,
		req.Subject.Type == "" || req.Subject.ID == "" || req.Action.Name == "" || req.Resource.Type == "",
		"a resource search needs a subject type and id, an action name and a resource type",
		func(e entity) Resource { return Resource{Type: e.Type, ID: e.ID, Properties: e.Properties} })
}

// SearchAction asks the PDP's Action Search API which actions req.Subject
// may perform on req.Resource (req.Action is not sent), and returns them
// all, following the PDP's pages. The rules are SearchSubject's: the
// results grant nothing by themselves (Evaluate before enforcing), and any
// fault is an error with no results.
func (c *Client) SearchAction(ctx context.Context, req Request, opts ...SearchOption) ([]Action, error) {
	return searchFor(ctx, c, searchAction, req, func(w *wireRequest) { w.Action = nil }, opts,
		req.Subject.Type == "" || req.Subject.ID == "" || req.Resource.Type == "" || req.Resource.ID == "",
		"an action search needs a subject type and id and a resource type and id",
		func(e entity) Action { return Action{Name: e.Name, Properties: e.Properties} })
}

// searchFor runs the search of kind for req, less what omit clears (what
// the search asks for), refused with ErrInvalidArgument, saying what it
// needs, when req is incomplete; it returns every result as made by as,
// or an error and no results.
func searchFor[T any](ctx context.Context, c *Client, kind searchKind, req Request, omit func(*wireRequest), opts []SearchOption, incomplete bool, needs string, as func(entity) T) ([]T, error) {
	if incomplete {
		return nil, fmt.Errorf("%w: %s", ErrInvalidArgument, needs)
	}
	w := wireOf(req)
	omit(&w)
	if err := w.check(); err != nil {
		return nil, err
	}
	var out []T
	if err := c.search(ctx, kind, w, opts, func(e entity) { out = append(out, as(e)) }); err != nil {
		return nil, err
	}
	return out, nil
}

// searchKind is the entity a search returns.
type searchKind uint8

const (
	searchSubject searchKind = iota
	searchResource
	searchAction
)

func (k searchKind) String() string {
	return [...]string{"subject search", "resource search", "action search"}[k]
}

// span is the name of a search call's span.
func (k searchKind) span() string {
	return [...]string{"authzen.SearchSubject", "authzen.SearchResource", "authzen.SearchAction"}[k]
}

func (k searchKind) endpoint(ep *Endpoints) string {
	return [...]string{ep.SearchSubject, ep.SearchResource, ep.SearchAction}[k]
}

type wirePage struct {
	Token string `json:"token,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

type wireSearch struct {
	wireRequest
	Page *wirePage `json:"page,omitempty"`
}

// search reads every page of a search and hands each result to add; it
// returns an error, and the caller drops what add collected, on any fault.
// Its span counts the results as the call's items.
func (c *Client) search(ctx context.Context, kind searchKind, w wireRequest, opts []SearchOption, add func(entity)) (err error) {
	c.core.CountCall()
	tel := c.core.Telemetry()
	p := pageReader{kind: kind, add: add}
	ctx, span := tel.StartCall(ctx, kind.span(), 0, 0)
	defer func() {
		if span.IsRecording() {
			tel.Count(span, p.results, 0)
		}
		tel.EndCall(span, telemetry.OutcomeOfErr(err), err)
	}()
	cfg := searchConfig{maxResults: DefaultMaxSearchResults}
	for _, o := range opts {
		if o != nil {
			o.applySearch(&cfg)
		}
	}
	switch {
	case cfg.pageLimit < 0:
		return fmt.Errorf("%w: WithPageLimit: the page limit must be 0 (the PDP's) or more, got %d", ErrInvalidArgument, cfg.pageLimit)
	case cfg.maxResults < 1:
		return fmt.Errorf("%w: WithMaxResults: the most results must be at least 1, got %d", ErrInvalidArgument, cfg.maxResults)
	}
	p.maxResults = cfg.maxResults
	var cl core.Call
	if err := c.core.Own(&cl, true); err != nil {
		return err
	}
	return c.core.Exchange(ctx, &cl, func(ctx context.Context, post core.Poster) error {
		ep, err := c.resolveEndpoints(ctx)
		if err != nil {
			return err
		}
		url := kind.endpoint(ep)
		if url == "" {
			return fmt.Errorf("%w: it names no %s endpoint", ErrDiscovery, kind)
		}
		body := wireSearch{wireRequest: w}
		if cfg.pageLimit > 0 {
			body.Page = &wirePage{Limit: cfg.pageLimit}
		}
		seen := make(map[string]struct{})
		for page := 1; ; page++ {
			data, err := encode(body)
			if err != nil {
				return err
			}
			if err := c.core.Late(ctx); err != nil {
				return err
			}
			answer, err := post(url, data, http.Header{"X-Request-Id": {newRequestID()}})
			if err != nil {
				return err
			}
			next, err := p.read(answer)
			switch {
			case err != nil:
				return err
			case next == "":
				return nil
			case page == MaxSearchPages:
				return pdp.Malformed("the search has more than %d pages", MaxSearchPages)
			case len(next) > maxPageToken:
				return pdp.Malformed("a page token exceeds %d bytes", maxPageToken)
			}
			if _, dup := seen[next]; dup {
				return pdp.Malformed("the PDP repeated a page token: the search would not end")
			}
			seen[next] = struct{}{}
			if body.Page == nil {
				body.Page = &wirePage{}
			}
			body.Page.Token = next // everything else stays as it was, as the specification asks
		}
	})
}

// entity is one search result as read.
type entity struct {
	Type, ID, Name string
	Properties     map[string]any
}

// pageReader reads the pages of one search, keeping count of what they
// hold across pages.
type pageReader struct {
	kind       searchKind
	maxResults int
	results    int
	bytes      int
	props      int
	add        func(entity)
}

var (
	searchMembers  = []string{"results", "page"}
	pageMembers    = []string{"next_token", "count", "total"}
	subjectMembers = []string{"type", "id", "properties"}
	actionMembers  = []string{"name", "properties"}
)

// The search decoder's own errors, with fixed texts.
var (
	errTooManyResults = errors.New("the search has more results than the client accepts")
	errTooManyBytes   = errors.New("the search's results hold more bytes than the client accepts")
	errNoType         = errors.New("a result has no type (or, for an action, no name)")
	errBadCount       = errors.New("the page's count is not the number of its results")
	errBadNumber      = errors.New("a page count or total is not a non-negative integer")
	errBadProperties  = errors.New("a result's properties name a member twice or are not valid UTF-8")
)

// read reads one page and returns its next token ("" at the end). A page
// is only handed on once read whole.
func (p *pageReader) read(body []byte) (string, error) {
	r := readers.Get().(*strictjson.Reader)
	defer func() { r.Release(); readers.Put(r) }()
	r.Reset(body)
	var (
		page     []entity
		next     string
		count    = -1
		sawItems bool
	)
	err := r.Object()
	for i, ok := r.Next(searchMembers, &err); ok; i, ok = r.Next(searchMembers, &err) {
		switch {
		case i == 0:
			sawItems = true
			err = r.Array()
			for r.More(&err) {
				if p.results+len(page) >= p.maxResults {
					err = errTooManyResults
					break
				}
				var e entity
				e, err = p.readEntity(r)
				page = append(page, e)
			}
		case r.Kind() == 'n':
			_, err = r.Value()
		default:
			next, count, err = readPage(r)
		}
	}
	if err == nil {
		err = r.End()
	}
	if err == nil && !sawItems {
		err = strictjson.ErrMissingMember
	}
	if err == nil && count >= 0 && count != len(page) {
		err = errBadCount
	}
	if err != nil {
		return "", pdp.Malformed("the body is not a valid %s answer: %s", p.kind, strictjson.Problem(err,
			errTooManyResults, errTooManyBytes, errNoType, errBadCount, errBadNumber, errBadProperties))
	}
	p.results += len(page)
	for _, e := range page {
		p.add(e)
	}
	return next, nil
}

// readPage reads the page object of a search answer: its next_token, which
// must be there, and its counts, of which count is returned (-1 for none).
func readPage(r *strictjson.Reader) (next string, count int, err error) {
	count = -1
	sawNext := false
	err = r.Object()
	for j, ok := r.Next(pageMembers, &err); ok; j, ok = r.Next(pageMembers, &err) {
		switch j {
		case 0:
			sawNext = true
			next, err = r.Str()
		case 1:
			count, err = readCount(r)
		default:
			_, err = readCount(r)
		}
	}
	if err == nil && !sawNext {
		err = strictjson.ErrMissingMember
	}
	return next, count, err
}

// readEntity reads one result: type, id and properties for a subject or a
// resource, name and properties for an action.
func (p *pageReader) readEntity(r *strictjson.Reader) (entity, error) {
	var e entity
	names, props := subjectMembers, 2
	if p.kind == searchAction {
		names, props = actionMembers, 1
	}
	member := func(i int) error {
		if i == props {
			raw, err := r.Value()
			switch {
			case err != nil:
				return err
			case raw.Kind() == 'n':
				return nil
			case raw.Kind() != '{':
				return fmt.Errorf("%w: the properties are not an object", strictjson.ErrWrongType)
			}
			// Decoded into maps, JSON costs tens of times its size: the
			// properties of a whole search are bounded apart.
			p.props += len(raw)
			if p.props > maxSearchProperties {
				return errTooManyBytes
			}
			if err := p.spend(len(raw)); err != nil {
				return err
			}
			if err := strictjson.Unmarshal(raw, &e.Properties); err != nil {
				return errBadProperties
			}
			return nil
		}
		s, err := r.Str()
		if err != nil {
			return err
		}
		if err := p.spend(len(s)); err != nil {
			return err
		}
		switch names[i] {
		case "type":
			e.Type = s
		case "id":
			e.ID = s
		case "name":
			e.Name = s
		}
		return nil
	}
	err := r.Object()
	for i, ok := r.Next(names, &err); ok; i, ok = r.Next(names, &err) {
		err = member(i)
	}
	if err == nil && (p.kind == searchAction && e.Name == "" || p.kind != searchAction && e.Type == "") {
		err = errNoType
	}
	return e, err
}

// spend counts n bytes against the search's budget. Properties are
// counted as their JSON, the most a search decodes into maps.
func (p *pageReader) spend(n int) error {
	p.bytes += n
	if p.bytes > MaxSearchBytes {
		return errTooManyBytes
	}
	return nil
}

// readCount reads a non-negative integer that fits an int.
func readCount(r *strictjson.Reader) (int, error) {
	raw, err := r.Value()
	if err != nil {
		return 0, err
	}
	if raw.Kind() != '0' {
		return 0, fmt.Errorf("%w: a page count is not a number", strictjson.ErrWrongType)
	}
	n, err := strconv.ParseUint(string(raw), 10, 31)
	if err != nil {
		return 0, errBadNumber
	}
	return int(n), nil
}
