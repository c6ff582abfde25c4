// Package openapitest checks HTTP traffic against an OpenAPI 3.1 document.
// The reference server's tests put a Checker around its handler
// (Middleware) or their client's transport (Transport): every request and
// answer that does not match the document is recorded, and the tests fail
// on Err. It is imported by tests only.
//
// The document's schemas are JSON Schema 2020-12 (OpenAPI 3.1), checked by
// a small validator of the keywords the reference server's document uses
// (schema.go; any other keyword fails New, so no part of a schema goes
// unchecked); the few parts of OpenAPI the document uses on top of them
// (paths with templates, operations, parameters of simple style, request
// bodies, responses with headers) are read in document.go. No JSON Schema
// library or OpenAPI framework enters the module graph.
//
// An exchange matches when:
//   - its path and method are an operation of the document, or else the
//     answer is the service's error body with 404 (unknown path) or 405
//     (known path, other method; the server may also answer 404 where one
//     of its patterns takes the path, as GET .../applications/assign);
//   - the answer's status is documented for the operation, and its headers
//     and body match that response;
//   - a request the document refuses (a missing member, a wrong type, a
//     Content-Type it does not list) is answered with a 4xx: the server
//     never accepts what its document says it refuses.
package openapitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// maxBody bounds the request and answer bodies a Checker keeps; a larger
// body is passed on unchecked.
const maxBody = 4 << 20

// Checker validates exchanges against one document. It is safe for
// concurrent use. Mark, ErrSince, Err and Checked may be called on a nil
// Checker, which has checked nothing.
type Checker struct {
	doc *document
	// HostRefused reports whether the server refuses req's Host before it
	// routes (the reference server without an issuer): only then is its
	// Host refusal (hostRefusal) taken as an answer on any path and
	// method. Nil: never. Set it before the first Check.
	HostRefused func(req *http.Request) bool

	mu       sync.Mutex
	failures []string
	checked  int
}

// New loads doc, an OpenAPI 3.1 document in JSON, compiles every schema it
// holds, and returns a Checker for it. It fails when doc is not OpenAPI 3.1,
// has no Error schema, or holds a schema keyword the validator does not
// check (the error names the keyword and the schema's JSON pointer).
func New(doc []byte) (*Checker, error) {
	d, err := load(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	return &Checker{doc: d}, nil
}

// Middleware returns next wrapped so that every exchange it serves is
// checked. It buffers each answer, so it suits tests, not production.
func (c *Checker) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil {
			// A request built for a handler, not read off a connection
			// (http.NewRequest with no body): the server reads it as empty.
			r.Body = http.NoBody
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(body) > maxBody {
			c.record(fmt.Sprintf("%s %s: request body not checked (%d bytes, %v)", r.Method, r.URL.Path, len(body), err))
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		res := rec.Result()
		check := r.Clone(r.Context())
		check.Body = io.NopCloser(bytes.NewReader(body))
		c.Check(check, res.StatusCode, res.Header, rec.Body.Bytes())
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Transport returns base (http.DefaultTransport when nil) wrapped so that
// every exchange a client makes through it is checked. Requests that fail
// in transport are not checked.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.Body != nil {
			b, err := io.ReadAll(req.Body)
			_ = req.Body.Close()
			if err != nil {
				return nil, err
			}
			body = b
		}
		out := req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := base.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		respBody, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(respBody))
		check := req.Clone(req.Context())
		check.Body = io.NopCloser(bytes.NewReader(body))
		check.URL.Scheme, check.URL.Host = "", "" // the document has no servers
		c.Check(check, resp.StatusCode, resp.Header, respBody)
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Check validates one exchange, records a failure when it does not match
// the document, and returns it. req.Body must hold the request body.
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	err := c.check(req, status, header, body)
	c.mu.Lock()
	c.checked++
	c.mu.Unlock()
	if err != nil {
		c.record(fmt.Sprintf("%s %s -> %d: %v\n\tanswer: %.400s", req.Method, req.URL.RequestURI(), status, err, body))
	}
	return err
}

func (c *Checker) check(req *http.Request, status int, header http.Header, body []byte) error {
	method := req.Method
	head := method == http.MethodHead
	if head {
		// net/http serves HEAD with the GET route and drops the body.
		method = http.MethodGet
	}
	op, params, err := c.doc.route(method, req.URL.EscapedPath())
	switch {
	case errors.Is(err, errPathNotFound):
		return c.routingError(req, status, []int{http.StatusNotFound}, body)
	case errors.Is(err, errMethodNotAllowed):
		if status == http.StatusMethodNotAllowed && header.Get("Allow") == "" {
			return errors.New("a 405 without Allow")
		}
		return c.routingError(req, status, []int{http.StatusMethodNotAllowed, http.StatusNotFound}, body)
	}
	if status < 400 {
		reqBody := []byte(nil)
		if !head && req.Body != nil {
			reqBody, _ = io.ReadAll(req.Body)
		}
		if reqErr := op.checkRequest(req, params, reqBody); reqErr != nil {
			return fmt.Errorf("answered %d to a request the document refuses: %w", status, reqErr)
		}
	}
	return op.checkResponse(status, header, body, head && len(body) == 0)
}

// routingError checks an answer of the router itself: one of the statuses
// in want, with the service's error body; or the server's refusal of the
// request's Host, which comes before routing (hostRefusal).
func (c *Checker) routingError(req *http.Request, status int, want []int, body []byte) error {
	if status == http.StatusBadRequest && c.HostRefused != nil && c.HostRefused(req) && c.hostRefusal(body) {
		return nil
	}
	ok := false
	for _, s := range want {
		ok = ok || status == s
	}
	if !ok {
		return fmt.Errorf("no operation of the document matches, yet the answer is %d (want %v)", status, want)
	}
	v, err := decodeJSON(body)
	if err != nil {
		return fmt.Errorf("the %d body is not JSON: %w", status, err)
	}
	if err := c.doc.errSchema.validate(v); err != nil {
		return fmt.Errorf("the %d body is not the Error shape: %w", status, err)
	}
	return nil
}

// hostRefusal reports whether body is the server's refusal of a request's
// Host (without an issuer it would name the tokens' issuer): the service's
// error body with the field Host, or an OAuth invalid_request whose
// description begins with "Host ". The server gives it on every path and
// method before it routes, so it is no routing answer the document's
// operations could list; routingError takes it only for a request whose
// Host the server refuses (HostRefused).
func (c *Checker) hostRefusal(body []byte) bool {
	v, err := decodeJSON(body)
	if err != nil {
		return false
	}
	m, _ := v.(map[string]any)
	if c.doc.oauthErrSchema != nil && c.doc.oauthErrSchema.validate(v) == nil {
		desc, _ := m["error_description"].(string)
		return m["error"] == "invalid_request" && strings.HasPrefix(desc, "Host ")
	}
	if c.doc.errSchema.validate(v) != nil {
		return false
	}
	details, _ := m["details"].([]any)
	if len(details) != 1 {
		return false
	}
	field, _ := details[0].(map[string]any)
	return field["field"] == "Host"
}

func (c *Checker) record(f string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, f)
}

// Checked returns how many exchanges were checked.
func (c *Checker) Checked() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked
}

// Err returns every failure recorded so far, joined, or nil.
func (c *Checker) Err() error { return c.ErrSince(0) }

// Mark returns a mark for ErrSince: the number of failures so far.
func (c *Checker) Mark() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.failures)
}

// ErrSince returns the failures recorded after mark (from Mark), joined,
// or nil: a fuzz target asks it for the exchanges of its own input.
func (c *Checker) ErrSince(mark int) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failures) <= mark {
		return nil
	}
	fs := c.failures[mark:]
	errs := make([]error, len(fs))
	for i, f := range fs {
		errs[i] = errors.New(f)
	}
	return fmt.Errorf("openapitest: %d exchanges do not match the document:\n%w", len(fs), errors.Join(errs...))
}
