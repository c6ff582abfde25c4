package mockserver

import "net/http"

// decisionRoutes registers the authorization-decision-provider endpoints.
// OWNER: helper 4.
func (s *Server) decisionRoutes(mux *http.ServeMux) {}
