package gatewaytest

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// Start serves h on a new loopback address until the test ends, as a
// stand-in gateway: before h runs, the request is counted (Requests), its
// Authorization header values are recorded WithAuthorizations, and its
// body is read whole (h may read it again), so that an answer h writes
// early never stalls a client still sending.
func Start(t testing.TB, h http.HandlerFunc, opts ...Option) *Server {
	t.Helper()
	s, ln := Listen(t, opts...)
	s.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.recordAuths {
			s.authMu.Lock()
			s.auths = append(s.auths, r.Header.Values("Authorization"))
			s.authMu.Unlock()
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client went away mid-body
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	return s
}

// Requests returns how many requests reached a server made by Start.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Authorizations returns, for each request that reached a server made by
// Start WithAuthorizations, in order, the values of its Authorization
// header (nil for none).
func (s *Server) Authorizations() [][]string {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	return append([][]string(nil), s.auths...)
}

// Hold blocks until the client gives up on r or the server closes (the
// test ends); a handler calls it to play a gateway that never answers.
func Hold(r *http.Request) { <-r.Context().Done() }

// Answer returns a handler that answers every request with status, the
// content type (none when empty) and body.
func Answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Raw returns a handler that writes resp to the connection as it is (a
// status line, headers and body the test spells out, malformed if it likes)
// and closes the connection: for answers no http.ResponseWriter would write.
func Raw(resp string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic("gatewaytest: Raw needs a connection to take over: " + err.Error())
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, resp)
	}
}
