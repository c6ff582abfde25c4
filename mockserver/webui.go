package mockserver

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"

	"github.com/orgauthz/orgauthz/internal/ascii"
)

// This file is the web UI's shell: its routes, the session check every page
// goes through, and the rendering of pages and errors. The pages' contents
// are built in webui_pages.go, the session cookie and the CSRF token in
// webui_session.go. The UI is off unless WithWebUI enables it: its routes
// are then not even registered.

// uiPrefix is the path of every page of the web UI.
const uiPrefix = "/ui"

//go:embed webui
var uiFiles embed.FS

// uiPages are the UI's pages by name, each its own template set: the
// layout (webui/layout.html) and the page's file, which defines "content".
var uiPages = func() map[string]*template.Template {
	funcs := template.FuncMap{"seg": url.PathEscape, "source": describeSource}
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(uiFiles, "webui/layout.html"))
	pages := map[string]*template.Template{}
	for _, name := range []string{"realm", "home", "organization", "user", "client", "evaluate", "error"} {
		pages[name] = template.Must(template.Must(layout.Clone()).ParseFS(uiFiles, "webui/"+name+".html"))
	}
	return pages
}()

// uiStyle is the UI's style sheet, served at /ui/style.css.
var uiStyle = func() []byte {
	b, err := uiFiles.ReadFile("webui/style.css")
	if err != nil {
		panic(err)
	}
	return b
}()

// webUIRoutes registers the web UI's pages. GET and HEAD pages answer a
// request without a valid session with a redirect to the realm's login
// page, and a session whose user lacks realm management with 403; every
// POST is refused when it comes from another origin (Sec-Fetch-Site,
// Origin) and, but for the login itself, when its CSRF token is not the
// session's.
//
// Every UI route first checks the request's Host (uiHost): DNS rebinding
// must not let a web page reach a UI on a loopback address.
func (s *Server) webUIRoutes(m mux) {
	const realm = uiPrefix + "/realms/{realm}"
	handle := func(pattern string, h http.Handler) { m.Handle(pattern, s.uiHost(h)) }
	handle("GET "+uiPrefix+"/{$}", http.HandlerFunc(s.uiRealmChooser))
	handle("GET "+uiPrefix+"/style.css", http.HandlerFunc(serveUIStyle))
	handle("GET "+realm+"/login", s.live(s.uiError, s.uiLoginForm))
	handle("POST "+realm+"/login", s.sameOrigin(s.live(s.uiError, s.uiLogin)))
	handle("POST "+realm+"/logout", s.uiGuard(uiSignedIn, s.uiLogout))
	handle("GET "+realm+"/home", s.uiPage(s.uiHome))
	handle("GET "+realm+"/organizations/{orgId}", s.uiPage(s.uiOrganization))
	handle("GET "+realm+"/users/{userId}", s.uiPage(s.uiUser))
	handle("GET "+realm+"/clients/{clientId}", s.uiPage(s.uiClient))
	handle("GET "+realm+"/evaluate", s.uiPage(s.uiEvaluateForm))
	handle("POST "+realm+"/evaluate", s.uiPage(s.uiEvaluate))
}

// uiHost refuses (403) a UI request whose Host is neither a loopback
// host (localhost, 127.0.0.0/8, ::1, any port) nor the host of the
// server's public URL (WithIssuer, -issuer), unless it comes from a
// trusted proxy (WithTrustedProxies), whose own configuration decides the
// hosts it serves. A web page that rebinds its own name to 127.0.0.1 sends
// its own name as Host, so it never reaches the UI of a local server.
func (s *Server) uiHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.uiHostAllowed(r) {
			s.uiError(w, r, errf(http.StatusForbidden, "the web UI answers only requests for a loopback host (localhost, 127.0.0.1, [::1]) or the server's public URL (WithIssuer, -issuer): open it by one of those"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// uiHostAllowed reports whether r's Host is one uiHost lets through.
func (s *Server) uiHostAllowed(r *http.Request) bool {
	if s.fromTrustedProxy(r) {
		return true
	}
	if s.issuer != "" {
		if u, err := url.Parse(s.issuer); err == nil && ascii.EqualFold(u.Host, r.Host) {
			return true
		}
	}
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if ascii.EqualFold(name, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// uiHandler is a page that runs once the session checked out.
type uiHandler func(w http.ResponseWriter, r *http.Request, ss *uiSession)

// uiAccess is what a UI route requires of its session.
type uiAccess int

const (
	// uiManages: a valid session whose user still exists and holds realm
	// management, read on every request. Every page that shows or
	// evaluates the realm.
	uiManages uiAccess = iota
	// uiSignedIn: a valid signed session of the realm, whoever its user
	// is now. Signing out only: a user who lost realm management, or was
	// deleted, must still be able to end the session.
	uiSignedIn
)

// uiPage protects a page that shows or evaluates the realm:
// uiGuard(uiManages, h).
func (s *Server) uiPage(h uiHandler) http.Handler { return s.uiGuard(uiManages, h) }

// uiGuard protects a UI route: the path's realm must be live (404), the
// request must carry a valid session of that realm (else a redirect to its
// login page); with uiManages its user must still exist (else a redirect to
// the login page) and hold realm management, as the admin API requires of
// a token (403 otherwise); a POST must come from the UI's own origin and
// carry the session's CSRF token (403 otherwise), whatever the access.
// The user's roles are read on every request: a user who loses realm
// management loses the UI at once, but can still sign out.
func (s *Server) uiGuard(access uiAccess, h uiHandler) http.Handler {
	page := s.live(s.uiError, func(w http.ResponseWriter, r *http.Request, realm string) {
		// A POST's form is read first: a request the form's rules refuse
		// is a 4xx whoever sends it.
		var form url.Values
		if r.Method == http.MethodPost {
			var err error
			if form, err = readUIForm(w, r); err != nil {
				s.uiError(w, r, err)
				return
			}
		}
		ss, ok := s.ui.session(r, realm, s.now())
		if ok {
			// Replicas: a logout at any of them is in the shared store.
			switch out, err := s.sharedRecorded(r.Context(), labelLogout, realm, ss.id, ss.expires.Add(-sessionLifetime)); {
			case errors.Is(err, errSharedPredates): // never served again: sign in anew
				ok = false
			case err != nil:
				w.Header().Set("Retry-After", proofRetryAfter)
				s.uiError(w, r, errf(http.StatusServiceUnavailable, "%s", said(err.Error())))
				return
			case out:
				ok = false
			}
		}
		if !ok {
			uiRedirect(w, r, uiRealmPath(realm)+"/login")
			return
		}
		err := s.liveRealm(realm, func(rm *store.Realm) error {
			if access == uiSignedIn {
				return nil
			}
			u, ok := rm.Users[ss.userID]
			if !ok {
				return errNoUser
			}
			ss.username = u.Username
			if !managesRealm(rm, u, s.now()) {
				return errf(http.StatusForbidden, "%s lacks realm management (realm-admin or realm-management/manage-realm)", said(u.Username)) // the session's own user
			}
			return nil
		})
		switch {
		case errors.Is(err, errNoUser):
			uiRedirect(w, r, uiRealmPath(realm)+"/login")
			return
		case err != nil:
			s.uiError(w, r, err)
			return
		}
		if r.Method == http.MethodPost {
			if !s.ui.csrfValid(ss, form.Get(csrfField)) {
				s.uiError(w, r, errf(http.StatusForbidden, "the form's CSRF token is missing or not this session's: reload the page and submit it again"))
				return
			}
			ss.form = form
		}
		h(w, r, ss)
	})
	return s.sameOrigin(page)
}

// managesRealm reports whether u may use the UI: whether a token of u
// would hold realm management, the permission the admin API requires
// (hasRealmManagement of the claims the token endpoint would write).
func managesRealm(rm *store.Realm, u *store.User, now time.Time) bool {
	c := userClaims(rm, u, store.ClientAdminCLI, now, 0)
	return hasRealmManagement(&c)
}

// errNoUser is a session whose user no longer exists.
var errNoUser = errf(http.StatusUnauthorized, "the session's user no longer exists")

// sameOrigin refuses a POST that a browser says comes from another origin
// (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host),
// the login form's included (login CSRF).
func (s *Server) sameOrigin(h http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.uiError(w, r, errf(http.StatusForbidden, "cross-origin form submission refused: submit the form from the UI's own pages"))
	}))
	return p.Handler(h)
}

// uiRedirect redirects to the UI's page at path (303, so that a POST
// becomes a GET there), such as a realm's login page.
func uiRedirect(w http.ResponseWriter, r *http.Request, path string) {
	uiHeaders(w)
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// uiRealmPath is the path of realm's pages, the realm's name escaped.
func uiRealmPath(realm string) string { return uiPrefix + "/realms/" + url.PathEscape(realm) }

// maxUIField bounds each field of a UI form.
const maxUIField = 2048

// csrfField is the name of the CSRF token's form field.
const csrfField = "csrf"

// readUIForm reads a POST's form body: application/x-www-form-urlencoded,
// at most maxBody bytes, each field given at most once and at most
// maxUIField bytes. The query is ignored.
func readUIForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); !ascii.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
		return nil, errf(http.StatusUnsupportedMediaType, "the form must be sent as application/x-www-form-urlencoded")
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, badField("body", "the form is too large or unreadable")
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, badField("body", "the form does not decode: %s", said(err.Error()))
	}
	for name, vs := range form {
		if len(vs) > 1 {
			return nil, badField(name, "given more than once")
		}
		if len(vs[0]) > maxUIField {
			return nil, badField(name, "longer than %d bytes", maxUIField)
		}
	}
	return form, nil
}

// uiHeaders sets the headers of every UI answer: never cached, never
// framed, no referrer, only the UI's own style sheet and forms.
func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// uiRender answers status with the named page showing data. The page is
// rendered whole before anything is written, so that a template error
// cannot leave half a page behind a 200.
func (s *Server) uiRender(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := uiPages[name].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		s.logger.Error("webui: render", "page", name, "err", err)
		s.writeErr(w, errf(http.StatusInternalServerError, "internal error"))
		return
	}
	uiHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// uiErrorPage is what the error page shows.
type uiErrorPage struct {
	uiFrame
	Status  int
	Reason  string
	Message string
}

// uiShow renders page name with data, or the error page of err when it
// is not nil.
func (s *Server) uiShow(w http.ResponseWriter, r *http.Request, name string, data any, err error) {
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	s.uiRender(w, http.StatusOK, name, data)
}

// uiError answers err as writeErr would, as an HTML page to a browser (a
// request whose Accept names text/html) and as the service's JSON error
// body to anyone else.
func (s *Server) uiError(w http.ResponseWriter, r *http.Request, err error) {
	if !acceptsHTML(r) {
		uiHeaders(w)
		s.writeErr(w, err)
		return
	}
	ae := s.asAPIError(err)
	s.uiRender(w, ae.status, "error", uiErrorPage{Status: ae.status, Reason: http.StatusText(ae.status), Message: ae.message})
}

// acceptsHTML reports whether the request's Accept header names text/html.
func acceptsHTML(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if ascii.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}

// serveUIStyle serves the style sheet.
func serveUIStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(uiStyle)
}

// uiRealmChooser serves /ui/: a form that asks for the realm, or with
// ?realm=name, a redirect to that realm's login page. It reads nothing of
// any realm: which realms exist is shown to no one unauthenticated.
func (s *Server) uiRealmChooser(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if vs, ok := q["realm"]; ok {
		if len(vs) != 1 || vs[0] == "" || len(vs[0]) > maxUIField {
			s.uiError(w, r, badField("realm", "give one realm name"))
			return
		}
		uiRedirect(w, r, uiRealmPath(vs[0])+"/home")
		return
	}
	s.uiRender(w, http.StatusOK, "realm", uiFrame{})
}

// uiLoginForm serves the realm's login page: the server's own login form,
// posting to the UI.
func (s *Server) uiLoginForm(w http.ResponseWriter, r *http.Request, realm string) {
	uiHeaders(w)
	writeLoginPage(w, http.StatusOK, loginData{Realm: realm, Action: uiRealmPath(realm) + "/login"})
}

// uiLogin checks the login form's username and password with the
// authorization endpoint's check, requires realm management as the admin
// API does, and on success sets the session cookie and redirects to the
// realm's first page. A failed login stores nothing and says only that it
// failed: 401 for a wrong name or password, 403 for a user without realm
// management.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request, realm string) {
	form, err := readUIForm(w, r)
	if err != nil {
		s.uiError(w, r, err)
		return
	}
	username := form.Get("username")
	var userID string
	err = s.liveRealm(realm, func(rm *store.Realm) error {
		u, err := checkPassword(rm, username, form.Get("password"))
		if err != nil {
			return err
		}
		if !managesRealm(rm, u, s.now()) {
			return errLacksManagement
		}
		userID = u.ID
		return nil
	})
	data := loginData{Realm: realm, Action: uiRealmPath(realm) + "/login", Username: username}
	switch {
	case errors.Is(err, errBadLogin):
		data.Error = "Invalid username or password."
		uiHeaders(w)
		writeLoginPage(w, http.StatusUnauthorized, data)
		return
	case errors.Is(err, errLacksManagement):
		data.Error = "This user lacks realm management (realm-admin or realm-management/manage-realm): the web UI is for the realm's administrators."
		uiHeaders(w)
		writeLoginPage(w, http.StatusForbidden, data)
		return
	case err != nil:
		s.uiError(w, r, err)
		return
	}
	// A session begins on a whole second: its cookie carries its expiry in
	// whole seconds, and every use asks the shared store about the
	// session's start read back from it, so the store is asked here about
	// that very start (asked about a later instant, it could vouch for the
	// login and refuse every use).
	now := s.now().Truncate(time.Second)
	if ir := s.issueRefusal(r.Context(), realm, "", now); ir != nil {
		w.Header().Set("Retry-After", ir.retryAfter)
		s.uiError(w, r, errf(http.StatusServiceUnavailable, "%s", said(ir.message)))
		return
	}
	http.SetCookie(w, s.ui.newSession(realm, userID, now, s.secureCookie(r)))
	uiRedirect(w, r, uiRealmPath(realm)+"/home")
}

// errLacksManagement is a correct login of a user without realm management.
var errLacksManagement = errf(http.StatusForbidden, "the user lacks realm management")

// uiLogout ends the session: its cookie is cleared and the session itself
// refused from now until it would have expired, so that a copy of the
// cookie is worth nothing either.
func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request, ss *uiSession) {
	// The shared record first, this replica's own only after it: a 503
	// leaves the session as it was here too, so the user's retry signs
	// out again rather than finding the session gone and being sent to
	// the login page with nothing shared.
	// A session the store's keyspace began after is refused for good
	// by every replica already: signed out, as the answer says.
	if _, err := s.sharedRecord(r.Context(), labelLogout, ss.realm, ss.id, anyWriter, ss.expires, ss.expires.Add(-sessionLifetime)); err != nil && !errors.Is(err, errSharedPredates) {
		w.Header().Set("Retry-After", proofRetryAfter)
		s.uiError(w, r, errf(http.StatusServiceUnavailable, "%s", said(err.Error())))
		return
	}
	s.ui.logout(ss, s.now())
	http.SetCookie(w, s.ui.clearCookie(ss.realm, s.secureCookie(r)))
	uiRedirect(w, r, uiRealmPath(ss.realm)+"/login")
}

// secureCookie reports whether the session cookie must be Secure: the
// request came over TLS, or its public URL (WithIssuer, or a trusted
// proxy's headers) is https.
func (s *Server) secureCookie(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.issuerBase(r), "https://")
}
