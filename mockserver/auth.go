package mockserver

import "net/http"

// This file is the authentication seam: token validation, permission checks
// and audit recording wrap every protected handler.
//
// OWNER: the identity/platform work (helper 4). The bodies below fail closed
// until the real validation lands.

// caller is the authenticated subject of a request.
type caller struct {
	realm    string // realm whose token this is
	subject  string // the token's sub: a user id or a service-account user id
	username string // preferred_username
	clientID string // azp
	org      string // the token's organization claim, "" when absent

	// resourceID is set by a mutating handler to the id it created or
	// changed; the audit entry records it.
	resourceID string
}

// handlerFunc is a handler that runs after authentication.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c *caller)

// realmAdmin protects an organization endpoint: a valid token of the path's
// {realm} (401 otherwise) holding realm management (403 otherwise). A
// non-empty action marks a mutating call, recorded in the audit log with the
// handler's outcome.
func (s *Server) realmAdmin(action string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, errf(http.StatusUnauthorized, "token validation is not available"))
	})
}

// platformAdmin protects a platform-administration endpoint: a valid master
// realm token holding platform-admin.
func (s *Server) platformAdmin(action string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, errf(http.StatusUnauthorized, "token validation is not available"))
	})
}

// authenticated protects a decision endpoint: any valid token of the path's
// {realm}.
func (s *Server) authenticated(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, errf(http.StatusUnauthorized, "token validation is not available"))
	})
}

// authState holds the token issuer and validators.
type authState struct{}
