package mockserver

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openAPIDocument is the OpenAPI 3.1 document of every route of the server,
// requests, answers and error shapes included. The package's tests validate
// every request they make and every answer they get against it, so it
// cannot drift from the code.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the server's OpenAPI 3.1 document (JSON), the one served
// at GET /openapi.json (an extension of the service specification). The
// caller must not change it.
func OpenAPI() []byte { return openAPIDocument }

// openAPIRoutes registers GET /openapi.json.
func (s *Server) openAPIRoutes(m mux) {
	m.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
		_, _ = w.Write(openAPIDocument)
	})
}
