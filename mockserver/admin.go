package mockserver

import "net/http"

// adminRoutes registers platform administration (/admin/...).
// OWNER: helper 4.
func (s *Server) adminRoutes(mux *http.ServeMux) {}
