package middleware

import (
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// The method a request is checked as must be the one the handler stack
// behind the middleware performs. Stacks take a method override from
// headers and from the form key _method; the middleware refuses every such
// input it is not told to trust, and takes the trusted ones as the stack
// does. It looks where gorilla/handlers (net/http's parsers), Rack 2 and 3
// (Rack::MethodOverride), Express (method-override, with body-parser's qs
// or multer), Echo, and PHP (Symfony's Request::getMethod, which Laravel
// uses) take an override, each of which overrides a POST only, and refuses
// what any of them would read as an override, as each parses it:
//
//   - the headers X-HTTP-Method-Override, X-HTTP-Method and
//     X-Method-Override, on any request, and the same names spelt with '_'
//     for '-' (X_HTTP_METHOD_OVERRIDE), which CGI, so PHP and Rack, reads
//     as the same variable;
//   - the form key _method in the URL query, on any request: refused even
//     when _method is trusted, since r.FormValue and Symfony take it and
//     r.PostFormValue (gin's c.PostForm) and Rack do not;
//   - _method in a form an outer handler parsed already (r.Form,
//     r.PostForm, r.MultipartForm), on any request;
//   - _method in a urlencoded POST body. Nothing after the headers is read
//     before the decision unless the service opted in: without trust the
//     body streams to the handler unread, and the read that would complete
//     a key read as _method fails (keyGuard), so no stack can take a method
//     from it; with trust the method is part of the question, so the
//     middleware reads the body (up to maxTrustedFormBytes, once the
//     caller's token has been read) and gives it back byte for byte;
//   - a multipart POST body, which the middleware does not read: it
//     streams to the handler, and the read that would complete a part
//     header fails (formGuard) unless the header is strict, one every
//     stack reads alike (CRLF lines of token ":" value, no control byte
//     but HTAB, no continuation or colonless line, exactly one
//     Content-Disposition that mime.ParseMediaType parses, with exactly
//     one name parameter and no name*, no Content-ID, no
//     "Content-Disposition:" or "Content-ID:" elsewhere), and its one name is
//     not read as _method; a multipart Content-Type that names its
//     boundary in a way not every stack reads alike fails every read, and
//     one naming none is guarded as urlencoded (Rack parses it so);
//   - a JSON POST body (a Content-Type holding "/json" or "+json", which
//     Laravel reads _method from): it streams to the handler, and the read
//     that would complete a string, key or value, read as _method (escapes
//     decoded) fails (jsonGuard), trusted or not. The guard reads the bytes
//     sent, so a JSON body with a Content-Encoding, or a charset other
//     than utf-8, is refused with 415 (Express's body-parser inflates and
//     decodes it before method-override reads _method).
//
// For a multipart body the rule is strictness, not a list of known
// spellings: a part header or a boundary is read only where every stack
// reads it alike, and anything else fails the read.
//
// A key is read as _method (keyMatch, overridekey.go) where net/http reads
// it so in any case, escaped or not, or PHP does (".method", " _method",
// "[method", "_method\x00..."; "_method[...]" an array), or Rack 2 does
// ("[_method", "_method]"), or Express's qs does ("[_method]", and
// "_method[]" or "_method[0]", whose first value method-override takes),
// in a pair cut by '&' or ';'. A body is a form (formKinds) where
// net/http, Rack or PHP parses it as one: no Content-Type or an empty one
// (Rack), or a media type, cut at ';', ',' or a blank, that is
// application/x-www-form-urlencoded or multipart/* in any case; it is
// JSON where Laravel parses it so (jsonContentType).
//
// A POST is one in any case ("post", as Symfony and the reference gateway
// read it) for every body guard; an override is honoured on a POST spelt
// POST only (gorilla/handlers and Rack override no "post").
//
// An override taken from anywhere else, or on another method, must be
// applied before the middleware (wrap the mux, not the handler): the
// middleware then checks the method it produced.

// formKey is the form key gorilla/handlers, Rack, Laravel, Symfony and
// method-override's usual setup take a method override from. It is
// lower-case, as keyMatch needs.
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
// or X-Method-Override (or one of them spelt with '_' for '-'), or _method
// in its query or in a form an outer handler parsed, is refused with 400:
// the middleware would check its method while the stack performed another
// (a DELETE under a POST-only grant). A POST body that net/http, Rack or
// PHP parses as a form (urlencoded or multipart; also one without a
// Content-Type) is not read before the decision: it streams to the
// handler, except that reading it fails with ErrFormMethodOverride where
// it holds a key, or names a part, that net/http, PHP (Symfony, Laravel),
// Rack or Express reads as _method (in any case, escaped or not; see the
// comment at the top of override.go), or where a multipart part header is
// not strict (not read alike by every stack: lines of name:value ending
// in CRLF, one Content-Disposition with one name, no Content-ID; see
// formGuard): no stack takes a method from it, and r.FormValue reads no
// field of that body. So does a JSON body (a Content-Type holding "/json"
// or "+json") holding a string, key or value, read as _method, which
// Laravel takes the method from; a JSON body with a Content-Encoding, or a
// charset other than utf-8, is refused with 415. A body no stack parses as a form or JSON
// (text/plain, say) streams to the handler unread and unguarded.
//
// With it, each trusted override present must appear once, and all must
// name the same method. _method in the query stays refused (400, saying to
// send it in the body): r.FormValue reads it there, r.PostFormValue and
// gin's c.PostForm do not, so stacks would perform different methods. That method is honoured when it is the request's
// own (an override applied before the middleware) or, on a POST (spelt
// POST: a "post" is refused, as stacks disagree on overriding it), when it
// is PUT, PATCH or DELETE, compared as sent: the only overrides
// gorilla/handlers applies (it performs the POST for any other, where the
// middleware would have checked that other) and ones every stack applies
// unchanged (Rack and Express upper-case the value). Anything else is
// refused with 400, as are the overrides not named, a header spelt with
// '_' for '-', and a key a stack could read otherwise than the middleware
// (_method in another case, spelt as PHP, Rack or Express reads it, in a
// pair cut by ';', or with a bad escape). A trusted _method is read as
// r.FormValue reads it: from the form an outer handler parsed, or else
// from a urlencoded POST body, without parsing it into the request; a
// method named in a body under a Content-Type that net/http reads as
// urlencoded and Rack or PHP does not (or more than one Content-Type) is
// refused with 400, and a body that only another stack parses as a form
// is guarded as without trust (as a JSON body is: _method in it is
// never a method the middleware reads). Such a body is read before the decision (once the caller's
// token has been read, so a request without one is 401 with its body
// unread; with WithClientToken, whatever the request carries), up to
// 64 KiB: a larger one is refused with 413 and not checked
// (to take larger forms, apply the override before the middleware). The
// read ends when the request's context does (its deadline or
// cancellation): the request then gets the unavailable answer
// (WithUnavailableHandler), with no gateway call. It ends through
// http.ResponseController's read deadline, so a ResponseWriter wrapped
// around the middleware's needs Unwrap; without it the read ends only with
// the body or the server's ReadTimeout. The
// body is given back to the handler byte for byte.
// It is never read from a multipart body the middleware got
// unparsed, which is guarded as without trust: to honour _method in
// multipart forms, apply the override before the middleware (wrap the mux
// in gorilla's handler), so that the form reaches it parsed and the method
// overridden.
//
// Whatever RequireFunc's function (or RequireAuthZEN's target) parses of
// the request it sees, the form or the body, reaches the handler parsed
// or read: the two share one body. Seeing a POST checked as DELETE, the
// function's r.FormValue reads no field of the body (r.ParseForm reads
// none for a DELETE), and the handler's POST parses the body as sent. An outer http.MaxBytesReader's limit
// holds for the handler's r.ParseForm as without the middleware.
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
	// late: the request's context ended before the middleware could
	// read what it needs to decide; it gets the unavailable answer
	// (WithUnavailableHandler) instead of status and message.
	late bool
}

// outOfTime is the refusal of a request whose context ended while (or
// before) the middleware read its body before the decision.
var outOfTime = &refusal{late: true}

func badRequest(message string) *refusal {
	return &refusal{status: http.StatusBadRequest, message: message}
}

// method returns the method a request is checked as: its own (GET for a
// HEAD), or the one its trusted overrides name (WithMethodOverride), and
// the body the callbacks and the handler must read instead of r.Body, or
// nil. It returns why the request is refused instead when it carries an
// override the middleware does not trust or cannot take, or a form it
// cannot read. It buffers a urlencoded POST body (given back whole) only
// when _method is trusted, and otherwise guards it, as it guards a
// multipart one: see the comment at the top of this file. f is r's
// header fields (config.fields). It does not change r.
func (c *config) method(w http.ResponseWriter, r *http.Request, f *fields) (string, io.ReadCloser, *refusal) {
	for i, h := range overrideHeaders {
		if f.overrides&(1<<i) != 0 && !slices.Contains(c.trustedHeaders, h) {
			return "", nil, badRequest("the request carries " + h + ", which this service does not honour; send the method itself")
		}
	}
	switch h, override := f.underscored, f.underscoredOverride; {
	case override:
		return "", nil, badRequest("the request carries " + h + " spelt with '_' for '-', which CGI, PHP and Rack read as " + h +
			"; send the method itself, or " + h + " as it is spelt when this service honours it")
	case h != "":
		return "", nil, badRequest("the request carries a header spelt with '_' for '-' that CGI, PHP and Rack read as " + h +
			"; send " + h + " as it is spelt")
	}
	formValues, body, ref := c.formOverride(w, r)
	if ref != nil {
		return "", nil, ref
	}
	m, ref := c.overridden(r, formValues)
	if ref != nil {
		return "", nil, ref
	}
	if m == http.MethodHead {
		// net/http's ServeMux serves a HEAD with a GET route's handler,
		// and RFC 9110 makes HEAD a GET without content: it is checked,
		// sent and shown to the callbacks as the GET it performs (what a
		// caller may GET, it may HEAD; nothing more).
		m = http.MethodGet
	}
	return m, body, nil
}

// fields is what the guards read of a request's header fields, in one
// pass over them (config.fields): a lookup of each of the four names the
// guards read costs a hash of the name and a probe, and the pass for the
// spellings with '_' is needed anyway.
type fields struct {
	// auth is the Authorization field's values, r.Header["Authorization"].
	auth []string
	// overrides has bit i set when overrideHeaders[i] has a value, as
	// len(r.Header[overrideHeaders[i]]) > 0 reads it (the canonical key:
	// Header.Get and Values ask for no other).
	overrides uint8
	// underscored is the header that a field names with '_' or '.' where
	// the header has '-' (X_HTTP_METHOD_OVERRIDE, Content_Type,
	// X.Http.Method.Override), or "": CGI, and so PHP and Rack, read '_'
	// and '-' as one (HTTP_X_HTTP_METHOD_OVERRIDE), and PHP stores every
	// variable with '.' read as '_' (Caddy's php_fastcgi and FrankenPHP
	// pass the '.' on), where net/http keeps the spellings apart. The
	// headers are the override headers (overrideHeaders, or one
	// WithMethodOverride trusts; underscoredOverride is then true) and the
	// ones the guards rely on (guardedHeaders). With more than one such
	// field, the one the pass met first.
	underscored         string
	underscoredOverride bool
}

// fields reads h in one pass, allocating nothing.
func (c *config) fields(h http.Header) (f fields) {
	for name, values := range h {
		switch len(name) {
		case len("Authorization"): // and len("X-Http-Method")
			switch name {
			case "Authorization":
				f.auth = values
				continue
			case overrideHeaders[1]:
				if len(values) > 0 {
					f.overrides |= 1 << 1
				}
				continue
			}
		case len(overrideHeaders[0]):
			if name == overrideHeaders[0] {
				if len(values) > 0 {
					f.overrides |= 1 << 0
				}
				continue
			}
		case len(overrideHeaders[2]):
			if name == overrideHeaders[2] {
				if len(values) > 0 {
					f.overrides |= 1 << 2
				}
				continue
			}
		}
		if f.underscored == "" && (strings.IndexByte(name, '_') >= 0 || strings.IndexByte(name, '.') >= 0) {
			f.underscored, f.underscoredOverride = c.underscoredHeader(name)
		}
	}
	return f
}

// underscoredHeader returns the header (fields.underscored) that name,
// a field name holding '_' or '.', names, and whether it is an override
// header, or "".
func (c *config) underscoredHeader(name string) (header string, override bool) {
	for _, o := range overrideHeaders {
		if cgiEqual(name, o) {
			return o, true
		}
	}
	for _, o := range c.trustedHeaders {
		if name != o && cgiEqual(name, o) {
			return o, true
		}
	}
	for _, g := range guardedHeaders {
		if cgiEqual(name, g) {
			return g, false
		}
	}
	return "", false
}

// guardedHeaders are the headers the middleware tells a body (and the
// caller) by: a field spelt with '_' for '-' that CGI reads as one of them
// (Content_Type: PHP reads a JSON body net/http sees no Content-Type of)
// is refused.
var guardedHeaders = []string{"Content-Type", "Content-Encoding", "Content-Length", "Transfer-Encoding", "Authorization"}

// cgiEqual reports whether CGI and PHP give the header fields a and b one
// variable: the same in any ASCII case, '-', '_' and '.' alike.
func cgiEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if cgiByte(a[i]) != cgiByte(b[i]) {
			return false
		}
	}
	return true
}

// cgiByte is c as the variable's name holds it: lower case, and '-' for
// '_' and '.'.
func cgiByte(c byte) byte {
	if c == '_' || c == '.' {
		return '-'
	}
	return ascii.LowerByte(c)
}

// overridden returns the method the trusted override headers of r and the
// values of its form key _method (formOverride) name, or why r is refused.
func (c *config) overridden(r *http.Request, formValues []string) (string, *refusal) {
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
	case !isPost(r.Method):
		return "", badRequest(from + " is honoured on POST requests only")
	case r.Method != http.MethodPost:
		// Symfony overrides a "post", gorilla/handlers and Rack do not.
		return "", badRequest(from + " is honoured on a POST spelt POST only (stacks disagree on whether " + r.Method + " is a POST); send the method in upper case")
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

// Callbacks that choose the question (RequireFunc's function,
// RequireAuthZEN's target) see the checked method as r.Method, and may
// read the request's form or body. The handler must get what they read:
// one body, read once. So the request they see (seen) is r itself, or a
// shallow copy with the checked method and the body the middleware gives
// the handler (guarded or given back), and the request forwarded is a copy
// of seen, with whatever a callback parsed into it, set back to r's method
// by handOver. Never r.Body replaced in r, which belongs to the caller.

// seen returns the request the callbacks see: r itself, or a shallow copy
// with method and body (when not nil).
func seen(r *http.Request, method string, body io.ReadCloser) *http.Request {
	if method == r.Method && body == nil {
		return r
	}
	c := r.WithContext(r.Context())
	c.Method = method
	if body != nil {
		c.Body = body
	}
	return c
}

// handOver sets fwd, a copy of the request the callbacks saw, back to
// r's method, for the handler. What a callback parsed stays, with the body
// it read from: the handler reads the same form. Except a form r.ParseForm
// made without the body, for a method it reads none for (a POST checked
// as DELETE): the handler's POST would parse the body, which is still
// unread, so that form is dropped and the handler parses its own.
func handOver(fwd, r *http.Request) {
	if fwd.Method == r.Method {
		return
	}
	if fwd.PostForm != nil && r.PostForm == nil && fwd.MultipartForm == r.MultipartForm &&
		!readsBody(fwd.Method) && readsBody(r.Method) {
		fwd.Form, fwd.PostForm = r.Form, r.PostForm
	}
	fwd.Method = r.Method
}

// handedOver returns the request a handler gets in place of r, once the
// callbacks saw sr (seen): r itself, or a copy of sr that handOver set
// back.
func handedOver(sr, r *http.Request) *http.Request {
	if sr == r {
		return r
	}
	fwd := *sr
	handOver(&fwd, r)
	return &fwd
}

// readsBody reports whether r.ParseForm reads a urlencoded body for a
// request of this method.
func readsBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// isPost reports whether a request of this method is a POST for the body
// guards and the overrides: in any case, as Symfony (which upper-cases the
// method before it takes _method) and the reference gateway (which
// compares methods ignoring case) read it. readsBody, which tells what
// net/http does, compares exactly, as net/http does.
func isPost(method string) bool { return ascii.EqualFold(method, http.MethodPost) }
