package mockserver

// CheckInvariants reports any inconsistency in the server's state: an index
// that disagrees with what it indexes, a department or assignment left
// behind by a delete, a department whose depth or alias breaks the rules.
// A healthy server returns nil. It takes the read lock, so it is safe to
// call while the server is serving; tests call it after concurrent or
// cascading changes to prove nothing was lost or half-applied.
func (s *Server) CheckInvariants() error {
	return s.store.CheckInvariants()
}
