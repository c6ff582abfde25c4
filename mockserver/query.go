package mockserver

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// A query that does not decode is refused on every route, before anything
// else is checked, as a malformed request line would be: url.Values (what
// r.URL.Query returns) silently drops a pair it cannot decode, so
// "count=%zz" read as no count and answered the default page, and
// "search=%zz" as no search at all. mux.Handle wraps every route's
// handler in wellFormedQuery, so no handler sees a query with a pair
// missing.

// wellFormedQuery answers 400 naming the parameter at fault when the
// request's query is not one url.ParseQuery decodes whole, and otherwise
// calls h. Routes of the OpenID Connect protocol (pattern under
// /protocol/openid-connect/) answer with the RFC 6749 error shape their
// clients read, the others with the service's.
func (s *Server) wellFormedQuery(pattern string, h http.Handler) http.Handler {
	oauth := strings.Contains(pattern, "/protocol/openid-connect/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" { // the usual case costs nothing
			h.ServeHTTP(w, r)
			return
		}
		name, problem, ok := queryFault(r.URL.RawQuery)
		if ok {
			h.ServeHTTP(w, r)
			return
		}
		if oauth {
			w.Header().Set("Cache-Control", "no-store")
			s.writeOAuthError(w, oauthErrorf(http.StatusBadRequest, "invalid_request", "query parameter %s: %s", name, said(problem)))
			return
		}
		s.writeErr(w, badField(name, "%s", said(problem)))
	})
}

// queryFault returns the first parameter of the raw query that
// url.ParseQuery cannot decode, as it was sent when its name does not
// decode either, and what is wrong with it; ok is true when the whole
// query decodes. It splits the query as url.ParseQuery does.
func queryFault(raw string) (name, problem string, ok bool) {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, kerr := url.QueryUnescape(rawKey)
		name = key
		if kerr != nil {
			name = rawKey
		}
		if strings.Contains(pair, ";") {
			return name, "a semicolon does not separate query parameters; use & between them, and %3B for a semicolon in a value", false
		}
		if kerr != nil {
			return name, "the name is not properly percent-encoded: " + escapeProblem(kerr), false
		}
		if _, err := url.QueryUnescape(rawValue); err != nil {
			return name, "the value is not properly percent-encoded: " + escapeProblem(err), false
		}
	}
	return "", "", true
}

// escapeProblem describes a url.QueryUnescape error without the package
// prefix: `invalid URL escape "%zz"`.
func escapeProblem(err error) string {
	var ee url.EscapeError
	if errors.As(err, &ee) {
		return ee.Error()
	}
	return err.Error()
}
