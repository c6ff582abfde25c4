package mockserver

import (
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// Server is the reference server: the service's whole API in memory. It is an
// http.Handler and is safe for concurrent use.
type Server struct {
	store   *store.Store
	handler http.Handler
	now     func() time.Time
	logger  *slog.Logger
	// issuer is the public base URL written into tokens; empty means it is
	// derived from each request (publicurl.go).
	issuer string
	// proxies are the trusted reverse proxies whose forwarding headers
	// are read when issuer is empty.
	proxies []netip.Prefix
	// accessAlg is the algorithm of the access tokens it mints
	// (WithAccessTokenAlgorithm; keys.go).
	accessAlg jose.SignatureAlgorithm

	// keys makes the realms' signing keys (keys.go).
	keys keySource
	// boot is the scope of this process's refusals, which every token it
	// mints carries: tokens of another scope are refused (boot.go).
	boot bootEpoch
	// replay and nonces, when set, replace the DPoP verifiers' in-memory
	// replay caches and the server's own nonces (dpop.go).
	replay dpop.ReplayStore
	nonces dpop.Nonces
	// shared, when set, is the store replicas share (shared.go): the
	// same as replay, read for revocations, spent codes and logouts.
	shared SharedStore

	auth *authState  // token issuing and validation (auth.go)
	cors *corsPolicy // the origins browsers may call from (cors.go)
	ui   *webUI      // the web UI's state; nil when it is off (webui.go)
	// denialLog, when set, is given the explanation of every decision
	// that is not GRANT (WithDenialLog; explain.go).
	denialLog func(format string, args ...any)
	// subjectScan is the most users a subject search's page evaluates:
	// maxSubjectScan when 0 (authzensearch.go). Only tests set it.
	subjectScan int

	// patterns are the routes' patterns, "METHOD /path", as registered.
	patterns []string
}

// wrapHandler, when set, wraps the handler of every Server New builds. Only
// the package's tests set it, in TestMain before any server exists, to
// check all of their traffic against the OpenAPI document.
var wrapHandler func(http.Handler) http.Handler

// ServeHTTP serves the service's API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// routes builds the server's handler. The organization subtree is split by
// its first path segment before it reaches a ServeMux, because the spec's
// paths overlap in ways a single ServeMux refuses: /alias/{alias} and
// /{orgId}/roles both match /alias/roles, /users/{userId}/assignments and
// /{orgId}/roles/{roleId} both match /users/roles/assignments.
func (s *Server) routes() http.Handler {
	preflights := &preflightRoutes{s: s, methods: map[*http.ServeMux]map[string]*[]string{}}
	newMux := func() mux { return newMux(&s.patterns, preflights) }
	top := newMux()
	s.identityRoutes(top)
	s.authorizeRoutes(top)
	s.adminRoutes(top)
	s.decisionRoutes(top)
	s.explainRoutes(top)
	s.authzenRoutes(top)
	s.openAPIRoutes(top)
	if s.ui != nil {
		s.webUIRoutes(top)
	}

	om := orgMuxes{root: newMux(), alias: newMux(), users: newMux(), global: newMux(), org: newMux()}
	s.organizationRoutes(om)
	top.route(orgPrefix, om.root)
	top.route(orgPrefix+"/", om)
	return top
}

// mux is a ServeMux whose own answers (no route: 404; a known path with
// another method: 405 with Allow) carry the service's JSON error body
// rather than ServeMux's plain text, and which answers a path that is not
// canonical ("//x", "/a/../b") with a 404 rather than ServeMux's redirect.
// Every pattern is registered with its method, so that ServeMux tells the
// two apart.
//
// A request is routed once: the ServeMux holds every pattern and, below
// them all, the catch-all "/", which takes exactly the requests no pattern
// takes. Only those are routed a second time, by unrouted, which holds the
// same patterns without the catch-all, to learn whether ServeMux would
// answer 404 or 405 and with which Allow. (A catch-all alone would turn
// every 405 into a 404.)
//
// Every path it routes also answers OPTIONS, CORS preflights included
// (cors.go).
type mux struct {
	*http.ServeMux
	unrouted   *http.ServeMux // the same patterns, no catch-all: ServeMux's own answers
	direct     *[]directRoute // routes taken before ServeMux (HandleDirect)
	patterns   *[]string      // every pattern registered, for the tests
	preflights *preflightRoutes
}

// newMux returns an empty mux that records its patterns in patterns and
// its paths' methods in preflights.
func newMux(patterns *[]string, preflights *preflightRoutes) mux {
	m := mux{ServeMux: http.NewServeMux(), unrouted: http.NewServeMux(), direct: &[]directRoute{},
		patterns: patterns, preflights: preflights}
	m.ServeMux.Handle("/", http.HandlerFunc(m.noRoute))
	return m
}

// route registers h for pattern on both ServeMuxes.
func (m mux) route(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, h)
	m.unrouted.Handle(pattern, h)
}

// preflightRoutes remembers the methods registered for each path of each
// mux, which its OPTIONS route answers.
type preflightRoutes struct {
	s       *Server
	methods map[*http.ServeMux]map[string]*[]string // mux -> path -> methods
}

// Handle registers h for pattern, which names its method, and, on the
// path's first pattern, the path's OPTIONS route. A request whose query
// does not decode never reaches h (wellFormedQuery).
func (m mux) Handle(pattern string, h http.Handler) {
	*m.patterns = append(*m.patterns, pattern)
	m.route(pattern, m.preflights.s.wellFormedQuery(pattern, h))
	method, path, _ := strings.Cut(pattern, " ")
	paths := m.preflights.methods[m.ServeMux]
	if paths == nil {
		paths = map[string]*[]string{}
		m.preflights.methods[m.ServeMux] = paths
	}
	methods, ok := paths[path]
	if !ok {
		methods = &[]string{}
		paths[path] = methods
		options := http.MethodOptions + " " + path
		*m.patterns = append(*m.patterns, options)
		m.route(options, m.preflights.s.preflight(methods))
	}
	*methods = append(*methods, method)
	if method == http.MethodGet {
		*methods = append(*methods, http.MethodHead)
	}
}

// HandleDirect registers h for pattern, whose one wildcard's value h
// is given, as Handle does, and also as a direct route, which the mux
// takes before ServeMux: a request of the pattern's method without a query
// whose path, clean and without a percent sign (escaped or not), has the
// pattern's literal segments and a non-empty segment for the wildcard goes
// to h at once, with that segment. That is the route ServeMux would pick
// only while no other pattern of the mux takes such a path more
// specifically (a literal where the pattern has its wildcard):
// TestDirectRoutesAgreeWithServeMux checks every direct route of the
// server against ServeMux. The pattern has literal segments and one
// single-segment wildcard, and no trailing slash. h does not read path
// values, though a direct route sets them as ServeMux would, for whatever
// wraps the server.
func (m mux) HandleDirect(pattern string, h func(w http.ResponseWriter, r *http.Request, value string)) {
	d := newDirectRoute(pattern, h)
	m.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, r.PathValue(d.name)) }))
	*m.direct = append(*m.direct, d)
}

// HandleFunc registers h for pattern, which names its method.
func (m mux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// ServeHTTP routes r, answering a non-canonical path, a path no pattern
// takes or a method the path does not take with the service's error body.
func (m mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; !isCleanPath(p) {
		// ServeMux would redirect to the cleaned path in plain text; the
		// service names its resources by canonical paths only.
		m.preflights.s.writeErr(w, errf(http.StatusNotFound, "no route for %s %q: the path is not canonical (%q)", methodWord(r.Method), p, cleanPath(p)))
		return
	}
	// A path that is its escaped form (RawPath empty) and has no percent
	// sign has segments that ServeMux, which routes by the escaped path
	// and unescapes each segment, reads as they are.
	// No query either: wellFormedQuery checks one on the way through
	// ServeMux.
	if r.URL.RawPath == "" && r.URL.RawQuery == "" && strings.IndexByte(r.URL.Path, '%') < 0 {
		for i := range *m.direct {
			if d := &(*m.direct)[i]; d.method == r.Method {
				if value, ok := d.take(r.URL.Path); ok {
					// As ServeMux leaves it: a middleware around the
					// server reads the pattern and its values after.
					r.Pattern = d.pattern
					r.SetPathValue(d.name, value)
					d.h(w, r, value)
					return
				}
			}
		}
	}
	m.ServeMux.ServeHTTP(w, r) // sets the path values the handler reads
}

// directRoute is a route of HandleDirect.
type directRoute struct {
	pattern, method string
	segments        []string // the path's, after its leading slash
	wild            int      // the index of the wildcard's segment
	name            string   // the wildcard's name
	h               func(http.ResponseWriter, *http.Request, string)
}

// newDirectRoute parses pattern; it panics on a pattern HandleDirect does
// not take, as ServeMux does on a malformed one.
func newDirectRoute(pattern string, h func(http.ResponseWriter, *http.Request, string)) directRoute {
	method, path, _ := strings.Cut(pattern, " ")
	d := directRoute{pattern: pattern, method: method, wild: -1, h: h}
	if method == "" || !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
		panic("mockserver: direct route " + pattern + ": a method and a path without a trailing slash are required")
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		if strings.HasPrefix(seg, "{") {
			name := strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
			if d.wild >= 0 || name == "" || strings.ContainsAny(name, "{}.$") || len(name)+2 != len(seg) {
				panic("mockserver: direct route " + pattern + ": one {name} wildcard is taken")
			}
			d.wild, d.name = len(d.segments), name
		} else if seg == "" || strings.ContainsAny(seg, "{}%") {
			panic("mockserver: direct route " + pattern + ": segment " + seg + " is not a literal")
		}
		d.segments = append(d.segments, seg)
	}
	if d.wild < 0 {
		panic("mockserver: direct route " + pattern + ": one {name} wildcard is required")
	}
	return d
}

// take reports whether path, clean and without a percent sign, is one of
// the route's, and returns its wildcard's value.
func (d *directRoute) take(path string) (value string, ok bool) {
	p := path[1:]
	for i, lit := range d.segments {
		seg, rest, more := strings.Cut(p, "/")
		if more != (i < len(d.segments)-1) || seg == "" || (i != d.wild && seg != lit) {
			return "", false
		}
		if i == d.wild {
			value = seg
		}
		p = rest
	}
	return value, true
}

// noRoute answers a request no pattern takes, the catch-all's: 405 with
// Allow where ServeMux would answer 405, else 404.
func (m mux) noRoute(w http.ResponseWriter, r *http.Request) {
	// ServeMux answers itself: capture its status and Allow header.
	h, _ := m.unrouted.Handler(r)
	rec := &muxAnswer{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch {
	case rec.status == http.StatusMethodNotAllowed:
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		m.preflights.s.writeErr(w, errf(http.StatusMethodNotAllowed, "method %s is not allowed on %q; allowed: %s", methodWord(r.Method), r.URL.Path, said(allow)))
	default:
		m.preflights.s.writeErr(w, errf(http.StatusNotFound, "no route for %s %q", methodWord(r.Method), r.URL.Path))
	}
}

// isCleanPath reports whether p is its own cleanPath, without cleaning
// it: it starts with a slash and has no empty segment but a last one and
// no "." or ".." segment.
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for rest := p[1:]; ; {
		seg, after, more := strings.Cut(rest, "/")
		switch seg {
		case ".", "..":
			return false
		case "":
			if more { // "//"
				return false
			}
		}
		if !more {
			return true
		}
		rest = after
	}
}

// cleanPath is the canonical form of a request path as ServeMux computes
// it: no empty or dot segments, the trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// muxAnswer records the status and headers of one of ServeMux's own
// answers and discards its plain-text body.
type muxAnswer struct {
	header http.Header
	status int
}

// Header returns the recorded header.
func (a *muxAnswer) Header() http.Header { return a.header }

// WriteHeader records the first status written.
func (a *muxAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}

// Write discards b, recording status 200 if none was written.
func (a *muxAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return len(b), nil
}

// orgMuxes routes /admin/realms/{realm}/organizations/... by the segment
// after "organizations": the literals alias, users and global each have a
// mux of their own, every other value is an organization id. Patterns are
// registered with their full path, e.g.
// "GET /admin/realms/{realm}/organizations/{orgId}/roles" on org.
type orgMuxes struct {
	root   mux // ".../organizations" and ".../organizations/" exactly
	alias  mux // ".../organizations/alias/..."
	users  mux // ".../organizations/users/..."
	global mux // ".../organizations/global/..."
	org    mux // ".../organizations/{orgId}/..."
}

// orgPrefix is the path of the organization subtree, {realm} included.
const orgPrefix = "/admin/realms/{realm}/organizations"

func (m orgMuxes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// r.URL.Path is /admin/realms/<realm>/organizations/<first>/...
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 6)
	first := ""
	if len(parts) >= 5 {
		first = parts[4]
	}
	switch first {
	case "":
		m.root.ServeHTTP(w, r)
	case "alias":
		m.alias.ServeHTTP(w, r)
	case "users":
		m.users.ServeHTTP(w, r)
	case "global":
		m.global.ServeHTTP(w, r)
	default:
		m.org.ServeHTTP(w, r)
	}
}

// methodWord is a request's method as an error names it: a method of
// HTTP's (RFC 9110, and PATCH) as the word it is, any other as a caller's
// value, quoted by errf and so kept or described by the errors' rule: a
// method is any token a caller chooses, a client secret included
// (a-server14 F1).
func methodWord(m string) any {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return said(m)
	}
	return m
}
