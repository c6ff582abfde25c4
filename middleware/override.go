package middleware

import (
	"net/http"
	"slices"
	"strings"
)

// The method a request is checked as must be the one the handler stack
// behind the middleware performs. Stacks take a method override from
// headers and from the form key _method; the middleware refuses every such
// input it is not told to trust, and takes the trusted ones as the stack
// does. It looks where gorilla/handlers, Rack, Express (method-override)
// and Echo take an override, each of which overrides a POST only:
//
//   - the headers X-HTTP-Method-Override, X-HTTP-Method and
//     X-Method-Override, on any request;
//   - the form key _method in the URL query (in any case, in pairs cut by
//     ';' too), on any request;
//   - _method in a form an outer handler parsed already (r.Form,
//     r.PostForm, r.MultipartForm), on any request;
//   - _method in a urlencoded POST body. Nothing after the headers is read
//     before the decision unless the service opted in: without trust the
//     body streams to the handler unread, and the read that would complete
//     a key _method (or a lookalike) fails (keyGuard), so no stack can take
//     a method from it; with trust the method is part of the question, so
//     the middleware reads the body (up to maxTrustedFormBytes, once the
//     caller's token has been read) and gives it back byte for byte;
//   - a part named _method in a multipart POST body, which the middleware
//     does not read: it streams to the handler, and the read that would
//     complete that part's header fails (formGuard), so no stack can take a
//     method from it, trusted or not.
//
// An override taken from anywhere else, or on another method, must be
// applied before the middleware (wrap the mux, not the handler): the
// middleware then checks the method it produced.

// formKey is the form key gorilla/handlers, Rack, Laravel, Symfony and
// method-override's usual setup take a method override from.
const formKey = "_method"

// overrideHeaders are the method override headers that handler stacks
// commonly honour.
var overrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// WithMethodOverride names the method overrides that the handler stack
// honours, so that the method checked, sent as the decision context and
// seen by RequireFunc's function (or RequireAuthZEN's target) is the one
// the stack performs. Each name is a header field name, such as
// X-HTTP-Method-Override, or the form key "_method" (which therefore
// cannot name a header). gorilla/handlers' HTTPMethodOverrideHandler
// honours both:
//
//	middleware.WithMethodOverride("X-HTTP-Method-Override", "_method")
//
// Without it, a request that carries X-HTTP-Method-Override, X-HTTP-Method
// or X-Method-Override, or _method in its query or in a form an outer
// handler parsed, is refused with 400: the middleware would check its
// method while the stack performed another (a DELETE under a POST-only
// grant). A POST body, urlencoded or multipart, is not read before the
// decision: it streams to the handler, except that reading it fails with
// ErrFormMethodOverride where it holds the key _method (urlencoded: in any
// case, escaped or not) or names a part _method (multipart): no stack takes
// a method from it, and r.FormValue reads no field of that body.
//
// With it, each trusted override present must appear once, and all must
// name the same method. That method is honoured when it is the request's
// own (an override applied before the middleware) or, on a POST, when it
// is PUT, PATCH or DELETE, compared as sent: the only overrides
// gorilla/handlers applies (it performs the POST for any other, where the
// middleware would have checked that other) and ones every stack applies
// unchanged (Rack and Express upper-case the value). Anything else is
// refused with 400, as are the overrides not named and a key the stack
// could read otherwise than the middleware (_method in another case, in a
// pair cut by ';', or with a bad escape). A trusted _method is read
// as r.FormValue reads it: from the form an outer handler parsed, or else
// from the query and a urlencoded POST body, without parsing them into the
// request. Such a body is read before the decision (once the caller's
// token has been read, so a request without one is 401 with its body
// unread; with WithClientToken, whatever the request carries), up to
// 64 KiB: a larger one is refused with 413 and not checked
// (to take larger forms, apply the override before the middleware). The
// body is given back to the handler byte for byte.
// It is never read from a multipart body the middleware got
// unparsed, which is guarded as without trust: to honour _method in
// multipart forms, apply the override before the middleware (wrap the mux
// in gorilla's handler), so that the form reaches it parsed and the method
// overridden.
//
// A later WithMethodOverride replaces an earlier one. No name, or a name
// that is neither a header field name nor "_method", is a wiring mistake.
func WithMethodOverride(names ...string) Option {
	return func(c *config) {
		c.trustedHeaders, c.trustForm = nil, false
		if len(names) == 0 {
			c.mistakes = append(c.mistakes, "WithMethodOverride needs a header name, such as X-HTTP-Method-Override, or the form key _method")
		}
		for _, name := range names {
			switch h := http.CanonicalHeaderKey(name); {
			case name == formKey:
				c.trustForm = true
			case !isToken(name):
				c.mistakes = append(c.mistakes, "WithMethodOverride needs header names, such as X-HTTP-Method-Override, or the form key _method")
			case !slices.Contains(c.trustedHeaders, h):
				c.trustedHeaders = append(c.trustedHeaders, h)
			}
		}
	}
}

// refusal is why the middleware answers a request itself, before any
// check: a 4xx status and the message of the error body.
type refusal struct {
	status  int
	message string
	header  [2]string // one header field to set, when header[0] != ""
}

func badRequest(message string) *refusal {
	return &refusal{status: http.StatusBadRequest, message: message}
}

// method returns the method a request is checked as: its own, or the one
// its trusted overrides name (WithMethodOverride). It returns why the
// request is refused instead when it carries an override the middleware
// does not trust or cannot take, or a form it cannot read. It buffers a
// urlencoded POST body (given back whole) only when _method is trusted, and
// otherwise guards it, as it guards a multipart one: see the comment at the
// top of this file.
func (c *config) method(r *http.Request) (string, *refusal) {
	for _, h := range overrideHeaders {
		if len(r.Header[h]) > 0 && !slices.Contains(c.trustedHeaders, h) {
			return "", badRequest("the request carries " + h + ", which this service does not honour; send the method itself")
		}
	}
	formValues, ref := c.formOverride(r)
	if ref != nil {
		return "", ref
	}
	if len(c.trustedHeaders) == 0 && len(formValues) == 0 {
		return r.Method, nil // no trusted override, or none present
	}
	var method, from string
	take := func(source string, values []string) *refusal {
		switch {
		case len(values) == 0:
			return nil
		case len(values) > 1:
			return badRequest(source + " must appear once and hold one method")
		case from != "" && values[0] != method:
			return badRequest(from + " and " + source + " name different methods; send one")
		}
		method, from = values[0], source
		return nil
	}
	for _, h := range c.trustedHeaders {
		if ref := take(h, r.Header[h]); ref != nil {
			return "", ref
		}
	}
	if ref := take("the form key "+formKey, formValues); ref != nil {
		return "", ref
	}
	switch {
	case from == "" || method == r.Method:
		return r.Method, nil
	case r.Method != http.MethodPost:
		return "", badRequest(from + " is honoured on POST requests only")
	case method != http.MethodPut && method != http.MethodPatch && method != http.MethodDelete:
		return "", badRequest(from + " must be PUT, PATCH or DELETE")
	default:
		return method, nil
	}
}

// isToken reports whether s is an RFC 9110 token, which methods and header
// field names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// withMethod returns r as RequireFunc's function sees it: r itself, or a
// shallow copy with the checked method when an override changed it.
func withMethod(r *http.Request, method string) *http.Request {
	if method == r.Method {
		return r
	}
	c := r.WithContext(r.Context())
	c.Method = method
	return c
}
