package mockserver

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// introspect serves Keycloak's token introspection endpoint (RFC 7662). Only
// a confidential client of the realm may introspect, with its secret (HTTP
// Basic or the form), as Keycloak allows: a public client is 403. A token
// that passes every check a protected route makes (signature, issuer, an
// access token, time, not revoked) is answered with its claims and
// active: true, client_id, username and token_type (DPoP for a bound
// token, RFC 9449 section 6.2); anything else, a refresh token included
// (the server issues none), with {"active": false} only. token_type_hint
// may be access_token or refresh_token; another value is 400, as Keycloak
// answers it. A DPoP-bound token needs no proof here: the client asks
// about it, it does not use it.
func (s *Server) introspect(w http.ResponseWriter, r *http.Request, realm string) {
	out, err := s.introspection(w, r, realm)
	if err != nil {
		s.writeOAuthAnswer(w, realm, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// inactive is the answer for every token that is not active.
var inactive = map[string]any{"active": false}

// introspection authenticates the client of an introspection request and
// describes its token.
func (s *Server) introspection(w http.ResponseWriter, r *http.Request, realm string) (map[string]any, error) {
	form, oe := readOAuthForm(w, r)
	if oe != nil {
		return nil, oe
	}
	clientID, err := s.authenticateClient(r, realm)
	if err != nil {
		return nil, err
	}
	err = s.liveRealm(realm, func(rm *store.Realm) error {
		if c, ok := rm.ClientNamed(clientID); ok && c.Public {
			return &oauthError{status: http.StatusForbidden, code: "invalid_request", description: "a public client may not introspect tokens"}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch form.Get("token_type_hint") {
	case "", "access_token", "refresh_token":
	default:
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "token_type_hint must be access_token or refresh_token"}
	}
	raw := form.Get("token")
	if raw == "" {
		return nil, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "token is required"}
	}
	claims, _, _, err := s.verifyToken(r, realm, raw)
	if errors.Is(err, errSharedUnavailable) {
		return nil, sharedOAuthUnavailable(w)
	}
	if err != nil {
		return inactive, nil
	}
	b, err := json.Marshal(claims)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	out["active"] = true
	out["client_id"] = claims.AuthorizedParty
	out["username"] = claims.PreferredUsername
	out["token_type"] = "Bearer"
	if claims.JKT() != "" {
		out["token_type"] = "DPoP"
	}
	return out, nil
}
