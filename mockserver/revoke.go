package mockserver

import (
	"errors"
	"net/http"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// revoke serves Keycloak's token revocation endpoint (RFC 7009). The client
// authenticates as at the token endpoint: a confidential one with its
// secret (HTTP Basic or the form), a public one by its client_id. An access
// token of the realm issued to that client is revoked: every route refuses
// it from then on (revocation.go), whatever name of the server it was
// minted under. As RFC 7009 section 2.2 says, a token that is not the
// realm's (malformed, signed by another key) or expired is answered 200 as
// a revoked one is, and nothing is recorded; a refresh token, which the
// server never issues, is one such.
// token_type_hint is ignored (section 2.1 allows it; Keycloak does). An ID
// token is 400 unsupported_token_type, a token of another client 400
// invalid_request, as Keycloak answers them.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request, realm string) {
	if err := s.revokeToken(w, r, realm); err != nil {
		s.writeOAuthAnswer(w, realm, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// revokeToken authenticates the client of a revocation request and revokes
// its token. Whether the token is the realm's is its signature under the
// realm's key (ownToken), not verifyToken's checks for serving it: a token
// minted while the client addressed the server by another name (its iss
// names another host), one not valid yet by this clock, one revoked or
// refused already, is revoked all the same, so that the 200 is never
// answered with the token still served somewhere. Only a token that is
// not the realm's, or expired beyond the clocks' margin, is answered 200
// with nothing recorded (RFC 7009 section 2.2).
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, realm string) error {
	form, oe := readOAuthForm(w, r)
	if oe != nil {
		return oe
	}
	clientID, err := s.authenticateClient(r, realm)
	if err != nil {
		return err
	}
	raw := form.Get("token")
	if raw == "" {
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "token is required"}
	}
	claims, err := s.ownToken(realm, raw)
	if err != nil && s.isIDToken(r, realm, raw) {
		err = issuer.ErrType // with ES256 access tokens, an ID token is under another key
	}
	switch {
	case errors.Is(err, issuer.ErrType):
		return &oauthError{status: http.StatusBadRequest, code: "unsupported_token_type", description: "only access tokens are revoked"}
	case err != nil:
		return nil // RFC 7009 section 2.2: a token not the realm's is not an error
	case claims.AuthorizedParty != clientID:
		return &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "the token was not issued to this client"}
	case !s.now().Before(claims.Expiry.Time().Add(dpop.ReplayStoreMargin)):
		// Expired at every replica whose clock is within the margin of
		// this one's: refused for good everywhere, nothing to record.
		return nil
	}
	// Replicas: the answer says revoked only once every replica refuses
	// the token; a store that fails is a 503 (the client retries). The
	// shared record comes first and this replica's own only after it:
	// a 503 leaves the token as it was here too, so the retry revokes it
	// again rather than finding it revoked and answering 200 with nothing
	// shared. A token the store's keyspace began after (it was lost
	// between the check above and this write) is refused for good by
	// every replica already: revoked, as the answer says.
	if _, err := s.sharedRecord(r.Context(), labelRevoked, realm, claims.ID, anyWriter, claims.Expiry.Time(), issuedAt(claims)); err != nil && !errors.Is(err, errSharedPredates) {
		return sharedOAuthUnavailable(w)
	}
	s.auth.revoked.revoke(realm, claims.ID, claims.Expiry.Time(), s.now())
	s.auth.verified.remove(realm, raw)
	s.logger.Info("token revoked", "realm", realm, "client", clientID, "jti", claims.ID)
	return nil
}

// ownToken returns the claims of raw when it is an access token realm's
// current key signed, whatever base URL its iss names and whatever the
// time (issuer.VerifyOwn); an error otherwise.
func (s *Server) ownToken(realm, raw string) (*issuer.Claims, error) {
	rm, ok := s.store.Lookup(realm)
	if !ok || rm.Decommissioned() {
		return nil, errRealmGone
	}
	key, kid, ok := s.accessVerificationKey(rm)
	if !ok { // the realm has signed no token yet
		return nil, issuer.ErrKey
	}
	return issuer.VerifyOwn(raw, key, kid, realm)
}

// authenticateClient authenticates the client of a request to the
// revocation or introspection endpoint as the token endpoint does and
// returns its clientId; a failure is 401 invalid_client.
func (s *Server) authenticateClient(r *http.Request, realm string) (string, error) {
	clientID, secret, basic, oe := clientCredentials(r)
	if oe != nil {
		return "", oe
	}
	return clientID, s.liveRealm(realm, func(rm *store.Realm) error {
		if _, ok := checkClient(rm, clientID, secret); !ok {
			return &oauthError{status: http.StatusUnauthorized, code: "invalid_client", description: "invalid client or client credentials", basic: basic}
		}
		noteCORSClient(r, realm, clientID)
		return nil
	})
}
