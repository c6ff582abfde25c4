// Package mockservertest runs the reference server (package mockserver) on a
// loopback httptest server for the length of a test, with helpers that mint
// tokens for it.
package mockservertest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/orgauthz/orgauthz/mockserver"
)

// Server is a running reference server. It embeds the *mockserver.Server,
// so IssueToken and AdminSecret are at hand; URL is its base URL (also the
// issuer base of its tokens). It is closed by the test's cleanup.
type Server struct {
	*mockserver.Server
	// URL is the base URL, e.g. http://127.0.0.1:41234, without a trailing slash.
	URL string

	t    testing.TB
	http *httptest.Server
}

// Start starts a reference server configured by opts on a loopback port and
// closes it when the test ends. WithIssuer is set to the server's URL (an
// option in opts cannot override it, since the tokens must name the server
// that checks them). A configuration error fails the test at once.
func Start(t testing.TB, opts ...mockserver.Option) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mockservertest: listen: %v", err)
	}
	url := "http://" + ln.Addr().String()
	srv, err := mockserver.New(append(append([]mockserver.Option(nil), opts...), mockserver.WithIssuer(url))...)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("mockservertest: %v", err)
	}
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: srv}}
	hs.Start()
	t.Cleanup(hs.Close)
	return &Server{Server: srv, URL: url, t: t, http: hs}
}

// Client returns an *http.Client for the server (keep-alive on loopback). It
// is closed with the server.
func (s *Server) Client() *http.Client { return s.http.Client() }

// Token mints an access token of realm for username (see
// mockserver.Server.IssueToken) and fails the test on error.
func (s *Server) Token(realm, username string, opts ...mockserver.TokenOption) string {
	s.t.Helper()
	tok, err := s.IssueToken(realm, username, opts...)
	if err != nil {
		s.t.Fatalf("mockservertest: token for %s/%s: %v", realm, username, err)
	}
	return tok
}

// AdminToken mints a master realm token of the bootstrap platform
// administration client's service account, which holds platform-admin.
func (s *Server) AdminToken() string {
	s.t.Helper()
	return s.Token("master", "service-account-platform-admin")
}
