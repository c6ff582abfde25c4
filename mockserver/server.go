package mockserver

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/internal/store"
)

// Server is the reference server: the service's whole API in memory. It is an
// http.Handler and is safe for concurrent use.
type Server struct {
	store   *store.Store
	handler http.Handler
	now     func() time.Time
	logger  *slog.Logger
	// issuer is the public base URL written into tokens; empty means it is
	// derived from each request's scheme and Host.
	issuer string

	auth *authState // token issuing and validation (auth.go)
}

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
	top := newMux()
	s.identityRoutes(top)
	s.adminRoutes(top)
	s.decisionRoutes(top)

	om := orgMuxes{root: newMux(), alias: newMux(), users: newMux(), global: newMux(), org: newMux()}
	s.organizationRoutes(om)
	top.Handle(orgPrefix, om.root)
	top.Handle(orgPrefix+"/", om)
	return top
}

// newMux returns a ServeMux whose unmatched requests get the service's JSON
// error body rather than ServeMux's plain text.
func newMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/", notFound)
	return m
}

// notFound answers a request no route matches.
func notFound(w http.ResponseWriter, r *http.Request) {
	writeErr(w, errf(http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// orgMuxes routes /admin/realms/{realm}/organizations/... by the segment
// after "organizations": the literals alias, users and global each have a
// mux of their own, every other value is an organization id. Patterns are
// registered with their full path, e.g.
// "GET /admin/realms/{realm}/organizations/{orgId}/roles" on org.
type orgMuxes struct {
	root   *http.ServeMux // ".../organizations" and ".../organizations/" exactly
	alias  *http.ServeMux // ".../organizations/alias/..."
	users  *http.ServeMux // ".../organizations/users/..."
	global *http.ServeMux // ".../organizations/global/..."
	org    *http.ServeMux // ".../organizations/{orgId}/..."
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
