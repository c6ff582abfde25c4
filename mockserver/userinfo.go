package mockserver

import (
	"net/http"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// userInfo is the answer of the userinfo endpoint (OpenID Connect Core 1.0
// section 5.3): the user the token names, as the realm knows them now.
type userInfo struct {
	Subject           string `json:"sub"`
	PreferredUsername string `json:"preferred_username"`
	Email             string `json:"email,omitempty"`
}

// userinfo serves Keycloak's userinfo endpoint, GET and POST, for any valid
// access token of the realm, Bearer or DPoP-bound (with its proof for this
// request), as every protected route checks it: its claims are read from
// the user's current record. A token that does not pass is a 401 with the
// challenge of RFC 6750 section 3 or RFC 9449 section 7.1. The token comes
// in the Authorization header only (RFC 6750 section 2.1); a POST body is
// not read.
func (s *Server) userinfo(w http.ResponseWriter, r *http.Request, c *caller) {
	var out userInfo
	err := s.liveRealm(c.realm, func(rm *store.Realm) error {
		u, ok := rm.Users[c.subject]
		if !ok {
			return store.NotFound("user %q", c.subject)
		}
		out = userInfo{Subject: u.ID, PreferredUsername: u.Username, Email: u.Email}
		return nil
	})
	if err != nil {
		// The token verified but names no user of the realm now.
		s.refuse(w, c.realm, &authFailure{code: "invalid_token", message: "the token's user does not exist", dpop: c.claims.JKT() != ""})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}
