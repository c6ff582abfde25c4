package mockserver

// organizationRoutes registers the organization API of spec sections 4.1 to
// 4.8 on the muxes of the organization subtree.
// OWNER: helper 3.
func (s *Server) organizationRoutes(m orgMuxes) {}
