package mockserver

import "net/http"

// identityRoutes registers discovery, JWKS and the token endpoint.
// OWNER: helper 4.
func (s *Server) identityRoutes(mux *http.ServeMux) {}
