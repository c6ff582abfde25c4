package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/ascii"
	"github.com/orgauthz/orgauthz/internal/fastcheck"
	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/internal/transport"
	"github.com/orgauthz/orgauthz/pep"
)

// Checker asks for decisions. *pep.Client satisfies it; tests may supply
// their own.
type Checker interface {
	CheckMany(ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) (pep.Result, error)
}

var _ Checker = (*pep.Client)(nil)

// Middleware wraps a handler so that it runs only for authorized requests.
// It is a plain func(http.Handler) http.Handler, so it composes with any
// router or middleware chain; With returns a copy with options applied.
type Middleware func(http.Handler) http.Handler

// Option changes how a middleware answers. A nil Option, or an option given
// a nil handler, is a wiring mistake: the middleware panics when it is built.
type Option func(*config)

type config struct {
	denied, unauthorized, unavailable http.Handler
	useClientToken                    bool
	// trustedHeaders are the canonical names of the method override
	// headers to trust, and trustForm whether the form key _method is
	// trusted (WithMethodOverride); none is by default.
	trustedHeaders []string
	trustForm      bool
	// logger logs a user callback that panicked (WithLogger); nil is
	// slog.Default().
	logger   *slog.Logger
	mistakes []string
}

// unavailableHandler is the outage answer: the denied one unless an option
// chose another.
func (c *config) unavailableHandler() http.Handler {
	if c.unavailable != nil {
		return c.unavailable
	}
	return c.denied
}

// pass hands a granted request to next, the protected handler, unless its
// caller gave up meanwhile: a cancelled request, or one whose deadline has
// passed, read on the clock too (transport.Late: the context's timer may
// not have fired yet). Such a request gets the outage answer, as it does
// when it gave up before the decision came; its handler never runs. The
// check is here, where every guard hands a request over (and the gin, echo
// and connect-go adapters, which run the guards), since a grant the client
// serves from its cache reads neither the deadline nor the cancellation.
// It allocates nothing.
func (c *config) pass(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if transport.Late(r.Context()) != nil {
		c.unavailableHandler().ServeHTTP(w, r)
		return
	}
	next.ServeHTTP(w, r)
}

func (c *config) handler(name string, h http.Handler, set *http.Handler) {
	if safego.IsNil(h) {
		c.mistakes = append(c.mistakes, name+" was given a nil handler")
		return
	}
	*set = h
}

// WithDeniedHandler replaces the 403 answer given when the gateway denies
// the request. The handler runs instead of the protected one;
// DecisionFromContext gives it the result.
func WithDeniedHandler(h http.Handler) Option {
	return func(c *config) { c.handler("WithDeniedHandler", h, &c.denied) }
}

// WithUnauthorizedHandler replaces the 401 answer given when the request
// carries no usable Bearer token or the gateway refuses it.
// DecisionFromContext reports false for the first case and the refused
// result for the second.
func WithUnauthorizedHandler(h http.Handler) Option {
	return func(c *config) { c.handler("WithUnauthorizedHandler", h, &c.unauthorized) }
}

// WithUnavailableHandler picks the answer given when the request was denied
// only because no decision could be had: the gateway was unreachable, timed
// out, answered 5xx, or the client's circuit breaker was open (every denied
// pair's Cause matches pep.ErrUnavailable), or the client's own token
// (WithClientToken) was replaced while the call was under way
// (pep.ErrTokenChanged). By default that answer is the
// denied one, a 403; ServiceUnavailable makes it a 503 with Retry-After.
// DecisionFromContext gives the handler the result.
func WithUnavailableHandler(h http.Handler) Option {
	return func(c *config) { c.handler("WithUnavailableHandler", h, &c.unavailable) }
}

// WithClientToken makes the middleware use the client's own token (set with
// SetToken or SetDPoPToken) instead of forwarding the caller's. Requests
// without an Authorization header are then checked too, and a 401 for the
// client's token is the service's own outage, not the caller's: it gets the
// unavailable answer (WithUnavailableHandler; 403 by default). So does a
// request while the client has no usable token (before its first
// SetToken, or between the ClearToken and the SetToken of a refresh).
func WithClientToken() Option {
	return func(c *config) { c.useClientToken = true }
}

// ServiceUnavailable returns a handler that answers 503 in the service's
// error shape with a Retry-After of retryAfter (rounded up to whole seconds;
// none when it is not positive). Use it with WithUnavailableHandler.
func ServiceUnavailable(retryAfter time.Duration) http.Handler {
	secs := int64((retryAfter + time.Second - 1) / time.Second)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if secs > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		}
		writeError(w, http.StatusServiceUnavailable, "no authorization decision could be had; try again later")
	})
}

// Require returns middleware that lets a request through only when the
// caller holds every one of scopes on resource. It answers as the package
// documentation describes; use With to pass options. A nil checker, an
// empty or wildcard ("*") resource, no scopes, an empty scope or a name
// that is not valid UTF-8 are wiring mistakes: Require panics.
func Require(c Checker, resource string, scopes ...string) Middleware {
	switch {
	case resource == "" || resource == "*":
		panic(`middleware: Require needs a resource other than "" and "*"`)
	case len(scopes) == 0 || slices.Contains(scopes, ""):
		panic("middleware: Require needs at least one scope, none of them empty")
	case !Checkable(resource, scopes):
		panic("middleware: Require needs a resource and scopes that are valid UTF-8 (JSON would send other names)")
	}
	cfg, fn := newConfig(c, Static(resource, scopes...))
	var rt any
	if fastcheck.Prepare != nil {
		// The question is the same for every request: pep makes its
		// pairs and the constant part of their cache keys once, here.
		rt = fastcheck.Prepare(resource, scopes)
	}
	return build(c, fn, rt, cfg, nil)
}

// Static returns a RequireFunc function that names the same resource and
// scopes for every request.
func Static(resource string, scopes ...string) func(*http.Request) (string, []string) {
	scopes = append([]string(nil), scopes...)
	return func(*http.Request) (string, []string) { return resource, scopes }
}

// RequireFunc is Require with the resource and scopes chosen per request by
// fn, and with options. fn may use anything of the request, the caller's
// input included: a resource the client refuses to check (empty, or the
// wildcard "*"), no scopes, or a name that is not valid UTF-8 (Checkable)
// make the answer 403 without a gateway call, never 500. A nil checker or fn, or a nil option, is a wiring mistake:
// RequireFunc panics, as does the returned Middleware given a nil handler.
func RequireFunc(c Checker, fn func(*http.Request) (resource string, scopes []string), opts ...Option) Middleware {
	cfg, fn := newConfig(c, fn)
	return build(c, fn, nil, cfg, opts)
}

// newConfig returns the default configuration of a guard of c and fn,
// with their wiring mistakes, and fn.
func newConfig(c Checker, fn func(*http.Request) (string, []string)) (config, func(*http.Request) (string, []string)) {
	cfg := config{
		denied:       http.HandlerFunc(forbidden),
		unauthorized: http.HandlerFunc(unauthorized),
	}
	if safego.IsNil(c) {
		cfg.mistakes = append(cfg.mistakes, "the Checker is nil")
	}
	if fn == nil {
		cfg.mistakes = append(cfg.mistakes, "the resource function is nil")
	}
	return cfg, fn
}

// With returns a middleware like m with opts applied after its own options:
// the way to give options to Require. It panics at once on a nil option or
// an option given a nil handler, and m must be made by Require,
// RequireFunc or RequireAuthZEN.
func (m Middleware) With(opts ...Option) Middleware {
	var probe config
	mustApply(&probe, opts)
	return func(next http.Handler) http.Handler {
		g, ok := m(next).(interface{ with([]Option) http.Handler })
		if !ok {
			panic("middleware: With applies only to middleware made by Require, RequireFunc or RequireAuthZEN")
		}
		return g.with(opts)
	}
}

// with returns the guard with opts applied after its own options.
func (g *guard) with(opts []Option) http.Handler {
	cfg := g.cfg
	mustApply(&cfg, opts)
	return &guard{c: g.c, pc: g.pc, fn: g.fn, route: g.route, cfg: cfg, next: g.next}
}

// mustApply applies opts to cfg and panics on any wiring mistake.
func mustApply(cfg *config, opts []Option) {
	for _, o := range opts {
		if o == nil {
			cfg.mistakes = append(cfg.mistakes, "an Option is nil")
			continue
		}
		o(cfg)
	}
	if len(cfg.mistakes) > 0 {
		panic("middleware: " + strings.Join(cfg.mistakes, "; "))
	}
}

// build returns the middleware of c, fn and cfg with opts applied,
// panicking on any wiring mistake. rt is what fastcheck.Prepare made of
// fn's constant question (Require), or nil.
func build(c Checker, fn func(*http.Request) (string, []string), rt any, cfg config, opts []Option) Middleware {
	mustApply(&cfg, opts)
	pc, _ := c.(*pep.Client)
	if pc == nil || fastcheck.Check == nil {
		pc, rt = nil, nil
	}
	return func(next http.Handler) http.Handler {
		if safego.IsNil(next) {
			panic("middleware: the handler to protect is nil")
		}
		return &guard{c: c, pc: pc, fn: fn, route: rt, cfg: cfg, next: next}
	}
}

// guard is one protected handler.
type guard struct {
	c Checker
	// pc is c when it is a *pep.Client, asked through internal/fastcheck;
	// nil for any other Checker, asked through CheckMany.
	pc *pep.Client
	fn func(*http.Request) (string, []string)
	// route is what fastcheck.Prepare made of Require's resource and
	// scopes, for pc, which is asked through it (fn still returns them,
	// for ClassifyAsked). nil for RequireFunc, or without pc.
	route any
	cfg   config
	next  http.Handler
}

// ServeHTTP implements http.Handler.
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// callback names the user's callback running now (the resource
	// function, the Checker): a panic in it is recovered and denied
	// (config.recovered); one anywhere else, a handler's, is not ours.
	var callback string
	defer func() {
		if callback != "" {
			g.cfg.recovered(w, r, callback, recover())
		}
	}()
	// Authorization and the override headers, in one pass; nothing
	// between here and checkedMethod runs user code that could change
	// them.
	f := g.cfg.fields(r.Header)
	auth := f.auth
	if !g.cfg.admit(w, r, auth) {
		return
	}
	var token string
	checked := false // the token's grammar was checked, not known
	if !g.cfg.useClientToken {
		var err error
		if token, checked, err = callerToken(auth); err != nil {
			g.cfg.unauthorized.ServeHTTP(w, r)
			return
		}
	}
	// Only a request that carries a token the gateway can be asked about
	// may have its body read before the decision, and only when the
	// service trusts _method (WithMethodOverride): see override.go.
	method, body, ok := g.cfg.checkedMethod(w, r, &f)
	if !ok {
		return
	}
	sr := seen(r, method, body) // see override.go
	callback = "the resource function"
	resource, scopes := g.fn(sr) // with g.route, Require's constants: asked through it, read against the answer
	callback = ""
	if g.route == nil && !Checkable(resource, scopes) {
		// Nothing a Checker could be asked about: refuse without a
		// call, whatever Checker this is.
		g.cfg.denied.ServeHTTP(w, handedOver(sr, r))
		return
	}
	// The decision travels to the handlers in the request's context, in
	// one allocation with the request that carries it and room for the
	// decisions of a few scopes.
	dr := &decidedRequest{decided: decided{Context: r.Context()}}
	d := &dr.decided
	d.res.Decisions = d.ds[:0]
	callback = "the Checker"
	err := g.check(r, token, method, resource, scopes, &d.res)
	callback = ""
	dr.req = *sr.WithContext(d) // WithContext is inlined: its copy stays on the stack
	handOver(&dr.req, r)
	r = &dr.req
	switch ClassifyAsked(resource, scopes, d.res, err, g.cfg.useClientToken) {
	case AnswerGrant:
		if checked {
			remember(token)
		}
		g.cfg.pass(g.next, w, r)
	case AnswerUnauthorized:
		g.cfg.unauthorized.ServeHTTP(w, r)
	case AnswerUnavailable:
		g.cfg.unavailableHandler().ServeHTTP(w, r)
	default:
		g.cfg.denied.ServeHTTP(w, r)
	}
}

// check asks the Checker for every scope of scopes on resource, with the
// request's method and path as the request context and token as the
// per-call token ("" for the client's own), into res. A *pep.Client is
// asked through internal/fastcheck, which answers a cached request
// without allocating; any other Checker through CheckMany.
func (g *guard) check(r *http.Request, token, method, resource string, scopes []string, res *pep.Result) error {
	if g.pc != nil {
		return fastcheck.Check(r.Context(), g.pc, fastcheck.Query{
			Token: token, Own: g.cfg.useClientToken, Route: g.route,
			Resource: resource, Scopes: scopes, Method: method, Path: r.URL.Path,
		}, res)
	}
	ctx := r.Context()
	if !g.cfg.useClientToken {
		ctx = pep.WithToken(ctx, token)
	}
	// The Checker is handed a copy of what is asked: the answer is read
	// against scopes (ClassifyAsked), which no Checker may rewrite, nor
	// the route's own for later requests (a Checker that rewrote them in
	// place to "read" and granted those let a "delete" through).
	var err error
	*res, err = g.c.CheckMany(ctx, []pep.Resource{{Name: resource, Scopes: slices.Clone(scopes)}},
		pep.WithRequestContext(pep.RequestContext{Method: method, Path: r.URL.Path}))
	return err
}

// outage reports whether every pair that was not granted failed closed for
// want of a decision (noDecision), none because the gateway said no.
func outage(res pep.Result) bool {
	some := false
	for _, d := range res.Decisions {
		if d.Allowed() {
			continue
		}
		if !noDecision(d.Cause) {
			return false
		}
		some = true
	}
	return some
}

// noDecision reports whether a fail-closed Cause says that no decision
// could be had, through no fault of the caller's: the gateway unreachable,
// slow, 5xx or the breaker open (ErrUnavailable), or the client's own token
// replaced while the call was under way (ErrTokenChanged; asking again
// decides it).
func noDecision(cause error) bool {
	return errors.Is(cause, pep.ErrUnavailable) || errors.Is(cause, pep.ErrTokenChanged)
}

// admit answers a request no guard may decide on itself, and reports
// whether it may go on: 400 for more than one Authorization header (a
// handler reading another than the one checked would act on an unchecked
// token) or a path that is not in canonical form (a policy and a handler
// could read it differently). auth is the request's Authorization
// header, r.Header["Authorization"].
func (c *config) admit(w http.ResponseWriter, r *http.Request, auth []string) bool {
	switch {
	case len(auth) > 1:
		writeError(w, http.StatusBadRequest, "the request has more than one Authorization header")
		return false
	case r.URL.Path == "" || r.URL.Path[0] != '/':
		// Readers disagree on such a path: FileServer serves it as the
		// absolute one, ServeMux redirects there, other routers match
		// nothing. It is a mount's doing, not the caller's.
		writeError(w, http.StatusBadRequest, `the request path does not start with '/': mount the middleware behind http.StripPrefix("/api", ...), not "/api/", which strips the path's leading slash`)
		return false
	case !canonicalPath(r):
		writeError(w, http.StatusBadRequest, "the request path must be in canonical form (no dot segments, empty segments, encoded slashes or escapes left after decoding, and escaped as net/url escapes it: url.URL{Path: p}.EscapedPath())")
		return false
	}
	return true
}

// checkedMethod returns the method a request admitted is checked as, or
// answers it with config.method's refusal: a method override the
// middleware cannot take (the stack could perform another method than the
// one checked) or a form it cannot read. The guards call it once the
// caller's token has been read, so that a request without one never has
// its body read; with one, only a trusted _method's body is read before
// the decision (bounded), any other streams to the handler guarded. f is
// r's header fields (config.fields), read after the last callback that
// could change them.
func (c *config) checkedMethod(w http.ResponseWriter, r *http.Request, f *fields) (method string, body io.ReadCloser, ok bool) {
	method, body, ref := c.method(w, r, f)
	if ref != nil && ref.late {
		// Out of time before the decision, as a check out of time is.
		c.unavailableHandler().ServeHTTP(w, r)
		return "", nil, false
	}
	if ref != nil {
		if ref.header[0] != "" {
			w.Header().Set(ref.header[0], ref.header[1])
		}
		writeError(w, ref.status, ref.message)
		return "", nil, false
	}
	return method, body, true
}

// canonicalPath reports whether the request path is one that every reader
// takes the same way: absolute, valid UTF-8, with no dot or empty segments
// once decoded, no encoded slash or backslash, no escape left after
// decoding (%252e is %2e to a second decoder), no backslash or control
// character, and no segment made only of dots and spaces before a ';'
// ("..;" is ".." to Tomcat, ".. " to IIS). A path-prefix policy could read
// any other one differently from the router (/files/public%2F..%2Fsecret is
// /files/secret to some).
//
// Every protected request's path is read here, in one pass over its bytes
// without allocating, and the path as sent (RawPath), when net/url kept
// one, by the rule at its end. An encoded separator can only be
// in the path as sent: a path net/url decoded without one (RawPath empty)
// escapes back without one, since '/' is not escaped and a backslash is
// refused.
func canonicalPath(r *http.Request) bool {
	p := r.URL.Path
	if p == "" || p[0] != '/' {
		return false
	}
	plain := true
	// seg is where the current segment starts; name is set while its
	// name (the part before a ';') holds only dots and spaces so far.
	seg, name, params := 1, true, false
	for i := 1; i < len(p); i++ {
		switch c := p[i]; pathClass[c] {
		case pathPlain:
			if !params {
				name = false
			}
		case pathDot: // '.' and ' '
		case pathSlash:
			if i == seg || !params && name {
				return false // an empty segment, or ., .., ..;, ".. " and the like
			}
			seg, name, params = i+1, true, false
		case pathSemicolon:
			if !params && name {
				return false // a name of dots and spaces (or none) before a ';'
			}
			params = true
		case pathPercent:
			if i+2 < len(p) && ascii.IsHex(p[i+1]) && ascii.IsHex(p[i+2]) {
				return false // an escape left after decoding
			}
			if !params {
				name = false
			}
		case pathHigh:
			plain = false
			if !params {
				name = false
			}
		default: // a control character, DEL or a backslash
			return false
		}
	}
	if seg < len(p) && !params && name {
		return false // the last segment is ., .. or the like
	}
	if !plain && !utf8.ValidString(p) {
		return false
	}
	// The path as sent (RawPath, set by net/url when the path was not sent
	// as net/url escapes it) is read as p by the routers that match it
	// (echo, chi, gin with UseRawPath) only when it holds no escape at
	// all, and so is p itself: they match any escape against route
	// literals as written, so a literal holding the escaped character
	// ("/files/%70rivate" for "/files/private", "%40" for "@", "caf%c3%a9"
	// for "café") is passed by for a broader one, while FileServer and the
	// handler read p: a false GRANT (a-client10b F1, a-fix10c F1). A path
	// sent as net/url escapes it (RawPath empty) is read as p by those
	// routers and ServeMux. gorilla/mux with UseEncodedPath matches
	// net/url's escaping of p against its literals, so a literal holding a
	// character net/url escapes ("(", " ", non-ASCII) is passed by there:
	// a known issue (a-last10).
	return r.URL.RawPath == "" || r.URL.RawPath == p
}

// The classes of a path's bytes for canonicalPath.
const (
	pathBad = iota // a control character, DEL, a backslash
	pathPlain
	pathDot // '.' or ' ', of which no segment name may be made alone
	pathSlash
	pathSemicolon
	pathPercent
	pathHigh // a byte of a multi-byte UTF-8 sequence
)

var pathClass = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c < 0x20 || c == 0x7f || c == '\\':
			t[c] = pathBad
		case c >= 0x80:
			t[c] = pathHigh
		case c == '.' || c == ' ':
			t[c] = pathDot
		case c == '/':
			t[c] = pathSlash
		case c == ';':
			t[c] = pathSemicolon
		case c == '%':
			t[c] = pathPercent
		default:
			t[c] = pathPlain
		}
	}
	return t
}()

// Errors of BearerToken.
var (
	// ErrNoBearerToken means the request has no Authorization header.
	ErrNoBearerToken = errors.New("middleware: the request has no Authorization header")
	// ErrMalformedBearer means the Authorization header is not "Bearer"
	// followed by an RFC 6750 token (letters, digits and -._~+/, then
	// optional = padding).
	ErrMalformedBearer = errors.New("middleware: the Authorization header is not a Bearer token")
	// ErrMultipleAuthorization means the request has more than one
	// Authorization header, which the middleware refuses (400): a handler
	// reading another one than the middleware would act on an unchecked
	// token.
	ErrMultipleAuthorization = errors.New("middleware: the request has more than one Authorization header")
)

// BearerToken returns the token of the request's one "Authorization:
// Bearer" header, exactly as the middleware reads it: the scheme is
// case-insensitive, and the token must be an RFC 6750 b64token, so that the
// pep client can always send it. Its errors never quote the header.
func BearerToken(r *http.Request) (string, error) {
	// As Values reads it, without canonicalizing a canonical key again.
	return BearerFromValues(r.Header["Authorization"])
}

// BearerFromValues is BearerToken's rule applied to the values of a
// request's authorization field, in any protocol (gRPC's authorization
// metadata, for one): none is ErrNoBearerToken, more than one
// ErrMultipleAuthorization, and the one value must be "Bearer" (in any
// case), spaces, and an RFC 6750 b64token, or ErrMalformedBearer. Its
// errors never quote a value.
func BearerFromValues(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrNoBearerToken
	case 1:
	default:
		return "", ErrMultipleAuthorization
	}
	token, ok := cutBearer(values[0])
	if !ok || !b64token(token) {
		return "", ErrMalformedBearer
	}
	return token, nil
}

// cutBearer returns what follows the scheme "Bearer" (in any case) and
// the spaces after it in an authorization value, and false when the value
// has another scheme. The token is not checked.
func cutBearer(value string) (token string, ok bool) {
	// strings.Cut at the first space and strings.EqualFold with "Bearer",
	// spelled out: no Unicode letter folds to one of "Bearer"'s, and
	// c|0x20 is a lower-case ASCII letter only for that letter in either
	// case.
	if len(value) < 7 || value[6] != ' ' ||
		value[0]|0x20 != 'b' || value[1]|0x20 != 'e' || value[2]|0x20 != 'a' ||
		value[3]|0x20 != 'r' || value[4]|0x20 != 'e' || value[5]|0x20 != 'r' {
		return "", false
	}
	i := 7
	for i < len(value) && value[i] == ' ' {
		i++
	}
	return value[i:], true
}

// b64token reports whether s matches RFC 6750's
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". Every
// protected request's token is read here, a JWT of a kilobyte often: the
// body is checked eight bytes a step against a table.
func b64token(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		if b64chars[w[0]]&b64chars[w[1]]&b64chars[w[2]]&b64chars[w[3]]&
			b64chars[w[4]]&b64chars[w[5]]&b64chars[w[6]]&b64chars[w[7]] == 0 {
			break
		}
	}
	for i < len(s) && b64chars[s[i]] != 0 {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ { // the padding
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// b64chars holds 1 for the bytes of a b64token's body.
var b64chars = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = 1
		case strings.IndexByte("-._~+/", byte(c)) >= 0:
			t[c] = 1
		}
	}
	return t
}()

// resultKey is the context key of the decision.
type resultKey struct{}

// decided is a request's context once the middleware has decided: the
// context it had, and the result, with room for the decisions of a few
// scopes.
type decided struct {
	context.Context
	res pep.Result
	ds  [2]pep.Decision
}

// decidedRequest is a request once the middleware has decided, and its
// context, in one allocation: req's context is the decided. A handler
// that keeps only the context keeps the request copy too (about 250 B).
type decidedRequest struct {
	req http.Request
	decided
}

// Value returns the result, as a *pep.Result, for resultKey; what the
// request's context holds for any other key.
func (d *decided) Value(key any) any {
	if key == (resultKey{}) {
		return &d.res
	}
	return d.Context.Value(key)
}

// DecisionFromContext returns the decision the middleware made for this
// request, and false when no decision was made (no middleware ran, or the
// request had no usable token).
func DecisionFromContext(ctx context.Context) (pep.Result, bool) {
	if res, ok := ctx.Value(resultKey{}).(*pep.Result); ok {
		return *res, true
	}
	return pep.Result{}, false
}

// forbidden is the default denied answer.
func forbidden(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusForbidden, "the caller is not allowed to do this")
}

// unauthorized is the default 401 answer.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	challenge := `Bearer`
	if _, decided := DecisionFromContext(r.Context()); decided {
		challenge = `Bearer error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, "a valid Bearer token is required")
}

// writeError writes the service's error body.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{http.StatusText(status), message})
}
