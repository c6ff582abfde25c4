package mockserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// This file answers browsers (CORS, the Fetch standard) as Keycloak does
// for a client's web origins.
//
// Which origins: each client of a fixture lists its webOrigins (an origin
// scheme://host[:port], "+" for the origins of its redirect URIs, "*" for
// any origin), and WithCORSOrigins (-cors-origin) names origins allowed
// for every realm and client.
//
// Preflights (OPTIONS with Origin and Access-Control-Request-Method) carry
// no credentials, so one is answered 204 with the CORS headers when the
// origin is allowed for any client of the path's realm (the master realm
// for the paths without one) or by WithCORSOrigins, and 403 without them
// otherwise. Every route's path answers OPTIONS.
//
// Actual requests from an allowed origin get Access-Control-Allow-Origin
// (the origin itself, never "*"), Access-Control-Allow-Credentials and
// Access-Control-Expose-Headers; those from any other origin get none. The
// client decides once the request names one: the token's azp on a
// protected route, the authenticated client at the token, revocation and
// introspection endpoints, as Keycloak decides; until then (discovery,
// JWKS, a request refused before its client is known) any client of the
// realm may allow the origin, so that a browser application can read
// the 401 and its challenge.

// corsAllowHeaders are the request headers a preflight allows beyond the
// CORS-safelisted ones.
const corsAllowHeaders = "Authorization, Content-Type, DPoP"

// corsExposeHeaders are the response headers a browser application may
// read beyond the CORS-safelisted ones: the challenges of a 401, the DPoP
// nonce, the Location of a created resource and Retry-After.
const corsExposeHeaders = "WWW-Authenticate, DPoP-Nonce, Location, Retry-After"

// corsMaxAge is how long, in seconds, a browser may cache a preflight's
// answer (Keycloak's default).
const corsMaxAge = "3600"

// originSet is a set of origins, or every origin.
type originSet struct {
	any     bool
	origins map[string]struct{}
}

func (o *originSet) add(origin string) {
	if origin == "*" {
		o.any = true
		return
	}
	if o.origins == nil {
		o.origins = map[string]struct{}{}
	}
	o.origins[origin] = struct{}{}
}

func (o *originSet) merge(other originSet) {
	o.any = o.any || other.any
	for origin := range other.origins {
		o.add(origin)
	}
}

func (o originSet) allows(origin string) bool {
	if o.any {
		return true
	}
	_, ok := o.origins[origin]
	return ok
}

// corsPolicy is the server's allowed origins, built by New and never
// changed after, so that it is read without a lock (a realm's clients are
// made by its fixture only).
type corsPolicy struct {
	global originSet                // WithCORSOrigins
	realms map[string]*realmOrigins // realm name -> its clients' origins
}

// realmOrigins are the web origins of one realm's clients.
type realmOrigins struct {
	anyClient originSet            // the union of the clients' origins
	byClient  map[string]originSet // clientId -> origins
}

// WithCORSOrigins allows browsers at these origins (scheme://host[:port],
// or "*" for any origin) to call every route of every realm, beside the
// webOrigins of each fixture client. New fails on an entry that is not an
// origin.
func WithCORSOrigins(origins ...string) Option {
	return func(c *config) { c.corsOrigins = append(c.corsOrigins, origins...) }
}

// newCORSPolicy builds the policy of the fixture f and the origins of
// WithCORSOrigins.
func newCORSPolicy(f Fixture, global []string) (*corsPolicy, error) {
	p := &corsPolicy{realms: map[string]*realmOrigins{}}
	for _, o := range global {
		if err := checkOrigin(o); err != nil {
			return nil, fmt.Errorf("mockserver: WithCORSOrigins: %q: %w", o, err)
		}
		p.global.add(o)
	}
	for _, fr := range f.Realms {
		ro := &realmOrigins{byClient: map[string]originSet{}}
		for _, fc := range fr.Clients {
			set, err := clientOrigins(fc)
			if err != nil {
				return nil, fixtureError("realm %q: client %q: %v", fr.Name, fc.ClientID, err)
			}
			if set.any || len(set.origins) > 0 {
				ro.byClient[fc.ClientID] = set
				ro.anyClient.merge(set)
			}
		}
		if len(ro.byClient) > 0 {
			p.realms[fr.Name] = ro
		}
	}
	return p, nil
}

// clientOrigins resolves a fixture client's webOrigins: "+" stands for
// the origins of its redirect URIs, as in Keycloak.
func clientOrigins(fc FixtureClient) (originSet, error) {
	var set originSet
	for i, o := range fc.WebOrigins {
		if slices.Contains(fc.WebOrigins[:i], o) {
			return set, fmt.Errorf("web origin %q is listed twice", o)
		}
		if o == "+" {
			for _, ru := range fc.RedirectURIs {
				if u, err := url.Parse(ru); err == nil {
					set.add(u.Scheme + "://" + u.Host)
				}
			}
			continue
		}
		if err := checkOrigin(o); err != nil {
			return set, fmt.Errorf("web origin %q: %w", o, err)
		}
		set.add(o)
	}
	return set, nil
}

// checkOrigin accepts "*" and an http(s) origin as a browser sends it:
// scheme://host[:port], lower case, nothing after.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return errors.New(`not an origin (scheme://host[:port], "+" or "*")`)
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme must be http or https")
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(o, "?#"):
		return errors.New("an origin has no user information, path, query or fragment")
	case o != strings.ToLower(o):
		return errors.New("an origin is lower case, as browsers send it")
	}
	return nil
}

// empty reports whether no origin is allowed at all.
func (p *corsPolicy) empty() bool {
	return !p.global.any && len(p.global.origins) == 0 && len(p.realms) == 0
}

// allowsRealm reports whether origin may call realm: WithCORSOrigins or
// any client of the realm allows it.
func (p *corsPolicy) allowsRealm(realm, origin string) bool {
	if p.global.allows(origin) {
		return true
	}
	ro, ok := p.realms[realm]
	return ok && ro.anyClient.allows(origin)
}

// allowsClient reports whether origin may read what the server answers
// the client clientID of realm: WithCORSOrigins or that client allows it.
func (p *corsPolicy) allowsClient(realm, clientID, origin string) bool {
	if p.global.allows(origin) {
		return true
	}
	ro, ok := p.realms[realm]
	if !ok {
		return false
	}
	set, ok := ro.byClient[clientID]
	return ok && set.allows(origin)
}

// corsRealm is the realm a path belongs to: {realm} of /realms/{realm}/...,
// /admin/realms/{realm}/... and /.well-known/*/realms/{realm}; the master
// realm (platform administration) for the other paths.
func corsRealm(path string) string {
	segs := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 5)
	switch {
	case len(segs) >= 2 && segs[0] == "realms":
		return segs[1]
	case len(segs) >= 3 && segs[0] == "admin" && segs[1] == "realms":
		return segs[2]
	case len(segs) >= 4 && segs[0] == ".well-known" && segs[2] == "realms":
		return segs[3]
	}
	return store.MasterRealm
}

// liveRealmAllows reports whether origin may call realm, which must be
// live for its clients' origins to count.
func (s *Server) liveRealmAllows(realm, origin string) bool {
	if s.cors.global.allows(origin) {
		return true
	}
	if _, err := s.lookupLive(realm); err != nil {
		return false
	}
	return s.cors.allowsRealm(realm, origin)
}

// preflight answers OPTIONS on a route's path, whose methods are those
// registered for it: a CORS preflight from an allowed origin with the
// CORS headers, from another origin with 403 and none; a plain OPTIONS
// (no Origin or no Access-Control-Request-Method) with Allow.
func (s *Server) preflight(methods *[]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := strings.Join(append(slices.Clone(*methods), http.MethodOptions), ", ")
		origin, method := r.Header.Get("Origin"), r.Header.Get("Access-Control-Request-Method")
		if origin == "" || method == "" {
			w.Header().Set("Allow", allow)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		realm := corsRealm(r.URL.Path)
		if !s.liveRealmAllows(realm, origin) {
			s.writeErr(w, errf(http.StatusForbidden, "origin %q may not call realm %q: it is not among its clients' webOrigins or the server's CORS origins", origin, realm))
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Access-Control-Allow-Methods", allow)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
	})
}

// corsClientKey is the context key of a request's *corsClient.
type corsClientKey struct{}

// corsClient is the client a request turned out to be made for (the
// token's azp, or the client that authenticated), once known.
type corsClient struct {
	realm, clientID string
}

// noteCORSClient records, for the CORS headers of the answer, that r is
// made by or for clientID of realm. It does nothing for a request without
// an Origin.
func noteCORSClient(r *http.Request, realm, clientID string) {
	if c, ok := r.Context().Value(corsClientKey{}).(*corsClient); ok {
		c.realm, c.clientID = realm, clientID
	}
}

// withCORS wraps h so that the answers to browsers carry the CORS headers
// their origin is allowed. A request without an Origin, and a preflight
// (the route's OPTIONS handler answers it), pass through untouched; while
// no origin is allowed at all, every request does.
func (s *Server) withCORS(h http.Handler) http.Handler {
	if s.cors.empty() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			// What a cache holds for a request without an Origin must
			// not answer one with an Origin.
			w.Header().Add("Vary", "Origin")
			h.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.ServeHTTP(w, r)
			return
		}
		c := &corsClient{}
		cw := &corsWriter{ResponseWriter: w, s: s, origin: origin, realm: corsRealm(r.URL.Path), client: c}
		h.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), corsClientKey{}, c)))
	})
}

// corsWriter adds the CORS headers to an answer as its header is written.
type corsWriter struct {
	http.ResponseWriter
	s             *Server
	origin, realm string
	client        *corsClient
	wrote         bool
}

func (w *corsWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.addHeaders()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *corsWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *corsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// addHeaders adds the CORS headers when the answer's client, or else the
// realm, allows the origin.
func (w *corsWriter) addHeaders() {
	h := w.Header()
	h.Add("Vary", "Origin")
	var ok bool
	if w.client.clientID != "" {
		ok = w.s.cors.allowsClient(w.client.realm, w.client.clientID, w.origin)
	} else {
		ok = w.s.liveRealmAllows(w.realm, w.origin)
	}
	if !ok {
		return
	}
	h.Set("Access-Control-Allow-Origin", w.origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
}
