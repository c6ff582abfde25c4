package mockserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TokenOption varies a token minted by IssueToken.
type TokenOption func(*tokenSpec)

// tokenSpec is what a minted token says beyond its subject.
type tokenSpec struct {
	org      string
	lifetime time.Duration
	jkt      string
	clientID string
	jti      string // the token's id, when set (an authorization code's: codeTokenID)
	// expiresBy, when set, is the latest exp the token may have (an
	// authorization code's: codeTokenSpec): its lifetime is cut to end by
	// then, and a token that would be expired at once is not minted
	// (errPastExpiresBy).
	expiresBy time.Time
}

// errPastExpiresBy is a mint refused because its tokenSpec.expiresBy has
// passed.
var errPastExpiresBy = errors.New("the token's latest expiry has passed")

// TokenOrganization adds the organization claim (an organization id or
// alias): decisions then count only the subject's assignments in that
// organization.
func TokenOrganization(org string) TokenOption {
	return func(t *tokenSpec) { t.org = org }
}

// TokenLifetime sets the token's lifetime instead of the configured
// tokenLifetimeSeconds. A negative lifetime yields an already expired token.
func TokenLifetime(d time.Duration) TokenOption {
	return func(t *tokenSpec) { t.lifetime = d }
}

// TokenDPoPBinding binds the token to the DPoP key with that RFC 7638
// thumbprint (its cnf.jkt); it must then be presented with the DPoP scheme
// and a proof signed by that key.
func TokenDPoPBinding(jkt string) TokenOption {
	return func(t *tokenSpec) { t.jkt = jkt }
}

// TokenClient sets the client the token was issued to (azp and aud). The
// default is admin-cli for users and the owning client for service accounts.
func TokenClient(clientID string) TokenOption {
	return func(t *tokenSpec) { t.clientID = clientID }
}

// errNoIssuer reports IssueToken on a server without WithIssuer.
var errNoIssuer = errors.New("mockserver: IssueToken needs WithIssuer (the issuer is otherwise derived from each request)")

// IssueToken mints an access token of realm for username, as the token
// endpoint would but without a password: a client's service account is
// "service-account-<clientId>". It fails when the server has no WithIssuer,
// or the realm, user or client is unknown or the realm is decommissioned,
// and, as the token endpoint, while a shared store's keyspace is too young
// to vouch for a token issued now (the error wraps dpop.ErrKeyspaceNew:
// retry within a minute) or cannot be asked (retry shortly). It is safe
// for concurrent use.
func (s *Server) IssueToken(realm, username string, opts ...TokenOption) (string, error) {
	if s.issuer == "" {
		return "", errNoIssuer
	}
	var spec tokenSpec
	for _, o := range opts {
		if o != nil {
			o(&spec)
		}
	}
	raw, claims, err := s.mint(s.issuer, realm, username, spec)
	if err != nil {
		return "", err
	}
	// As the token endpoint: no token the shared store's young keyspace
	// could never vouch for (every replica would refuse it for good).
	if ir := s.issueRefusal(context.Background(), realm, claims.ID, issuedAt(claims)); ir != nil {
		return "", fmt.Errorf("mockserver: issue token: %w", ir)
	}
	return raw, nil
}

// mint signs a token of realm for the user named username and returns it
// with its claims. The claims are built under the realm's read lock and
// signed after it: an RS256 signature takes a millisecond or more, which
// the realm's writers need not wait for (the key never changes).
func (s *Server) mint(base, realm, username string, spec tokenSpec) (string, *issuer.Claims, error) {
	rm, err := s.lookupLive(realm)
	if err != nil {
		return "", nil, fmt.Errorf("mockserver: issue token: %w", err)
	}
	key, kid, err := s.accessKey(rm)
	if err != nil {
		return "", nil, fmt.Errorf("mockserver: issue token: %w", err)
	}
	var claims issuer.Claims
	cfg := s.store.Config()
	err = s.store.Read(realm, func(r *store.Realm) error {
		if r.Decommissioned() {
			return store.NotFound("realm %q is decommissioned", realm)
		}
		u, ok := r.UserNamed(username)
		if !ok {
			return store.NotFound("user %q in realm %q", username, realm)
		}
		clientID := spec.clientID
		if clientID == "" {
			clientID = store.ClientAdminCLI
			if u.ServiceAccountOf != "" {
				clientID = r.Clients[u.ServiceAccountOf].ClientID
			}
		}
		if _, ok := r.ClientNamed(clientID); !ok {
			return store.NotFound("client %q in realm %q", clientID, realm)
		}
		lifetime := spec.lifetime
		if lifetime == 0 {
			lifetime = time.Duration(cfg.TokenLifetimeSeconds) * time.Second
		}
		now := s.now()
		if !spec.expiresBy.IsZero() {
			if left := spec.expiresBy.Sub(now); left < lifetime {
				lifetime = left
			}
			if lifetime < time.Second { // exp is in whole seconds
				return errPastExpiresBy
			}
		}
		claims = userClaims(r, u, clientID, now, lifetime)
		s.boot.stamp(&claims)
		claims.Tenant = r.Incarnation()
		claims.Issuer = issuer.RealmIssuer(base, realm)
		claims.Organization = spec.org
		if spec.jti != "" {
			claims.ID = spec.jti
		}
		if spec.jkt != "" {
			claims.Confirmation = &issuer.Confirmation{JKT: spec.jkt}
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("mockserver: issue token: %w", err)
	}
	signed, err := issuer.Sign(key, kid, &claims)
	if err != nil {
		return "", nil, fmt.Errorf("mockserver: issue token: %w", err)
	}
	return signed, &claims, nil
}

// idToken mints the RS256 ID token (OpenID Connect Core 1.0 section 2) that
// goes with the access token whose claims are at: same issuer, subject,
// times and user, the client as audience and authorized party, signed by
// the realm's RSA key; with the authorization request's nonce, and
// the time the user authenticated.
func (s *Server) idToken(realm string, at *issuer.Claims, nonce string, authTime time.Time) (string, error) {
	rm, err := s.lookupLive(realm)
	if err != nil {
		return "", err
	}
	key, kid, err := rm.RSAKey(s.keys.rsa(rm.Name))
	if err != nil {
		return "", err
	}
	c := issuer.IDClaims{
		Claims: jwt.Claims{Issuer: at.Issuer, Subject: at.Subject, Audience: jwt.Audience{at.AuthorizedParty},
			Expiry: at.Expiry, IssuedAt: at.IssuedAt, ID: store.NewID()},
		AuthTime:          jwt.NewNumericDate(authTime),
		AuthorizedParty:   at.AuthorizedParty,
		Nonce:             nonce,
		PreferredUsername: at.PreferredUsername,
		Email:             at.Email,
	}
	return issuer.SignIDToken(key, kid, &c)
}

// userClaims builds the claims of u's token: effective realm roles (direct
// and through groups) and, for realm admins, realm-management/manage-realm.
func userClaims(r *store.Realm, u *store.User, clientID string, now time.Time, lifetime time.Duration) issuer.Claims {
	roles := store.Set{}
	r.AddEffectiveRoles(u, roles)
	names := r.RoleNames(roles)
	c := issuer.Claims{
		Claims: jwt.Claims{
			Subject:  u.ID,
			Audience: jwt.Audience{clientID},
			IssuedAt: jwt.NewNumericDate(now),
			Expiry:   jwt.NewNumericDate(now.Add(lifetime)),
			ID:       store.NewID(),
		},
		Type:              issuer.TypeAccess,
		AuthorizedParty:   clientID,
		PreferredUsername: u.Username,
		Email:             u.Email,
		RealmAccess:       &issuer.Access{Roles: names},
	}
	if _, ok := roles[r.RoleByName[store.RoleRealmAdmin]]; ok {
		c.ResourceAccess = map[string]issuer.Access{realmManagementClient: {Roles: []string{manageRealmRole}}}
	}
	return c
}
