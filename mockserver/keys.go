package mockserver

import (
	"crypto"
	"errors"
	"net/http"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// This file says which key signs what. Every realm has an RSA key, made on
// first use, that signs its ID tokens and, by default, its access tokens
// (RS256, as Keycloak's realms do), and a P-256 key that signs its access
// tokens instead with WithAccessTokenAlgorithm("ES256"). The JWKS lists
// the keys in use, discovery their algorithms.

// accessKey returns the key that signs rm's access tokens and its key id,
// making the RSA key if this is the realm's first RS256 token.
func (s *Server) accessKey(rm *store.Realm) (crypto.Signer, string, error) {
	if s.accessAlg == issuer.ES256 {
		return rm.SigningKey, rm.KeyID, nil
	}
	return rm.RSAKey(issuer.GenerateRSAKey)
}

// accessVerificationKey returns the public key that rm's access tokens
// must be signed by and its key id. It never makes a key: before rm's
// first RS256 token there is none, and ok is false (no token can verify).
// It takes no lock.
func (s *Server) accessVerificationKey(rm *store.Realm) (pub crypto.PublicKey, kid string, ok bool) {
	if s.accessAlg == issuer.ES256 {
		return rm.SigningKey.Public(), rm.KeyID, true
	}
	k, kid, ok := rm.LoadRSAKey()
	if !ok {
		return nil, "", false
	}
	return k.Public(), kid, true
}

// publicKeys returns rm's JWKS: the RSA key (ID tokens, and access tokens
// by default) and, when access tokens are ES256, the P-256 key.
func (s *Server) publicKeys(rm *store.Realm) (jose.JSONWebKeySet, error) {
	k, kid, err := rm.RSAKey(issuer.GenerateRSAKey)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{issuer.PublicJWK(k, kid)}}
	if s.accessAlg == issuer.ES256 {
		set.Keys = append(set.Keys, issuer.PublicJWK(rm.SigningKey, rm.KeyID))
	}
	return set, nil
}

// signingAlgorithms returns every algorithm the server signs tokens with:
// RS256 (ID tokens, and access tokens by default) and ES256 when access
// tokens are ES256. Discovery lists them in
// id_token_signing_alg_values_supported, as Keycloak lists every algorithm
// its realms sign with: OpenID Connect libraries (go-oidc's Verifier) take
// that list as the algorithms a token of the provider may have.
func (s *Server) signingAlgorithms() []string {
	algs := []string{string(issuer.RS256)}
	if s.accessAlg == issuer.ES256 {
		algs = append(algs, string(issuer.ES256))
	}
	return algs
}

// isIDToken reports whether raw is an ID token of realm: signed by the
// realm's RSA key, whatever key signs its access tokens, with its issuer,
// and of type ID. It makes no key.
func (s *Server) isIDToken(r *http.Request, realm, raw string) bool {
	rm, ok := s.store.Lookup(realm)
	if !ok {
		return false
	}
	k, kid, ok := rm.LoadRSAKey()
	if !ok {
		return false
	}
	_, err := issuer.Verify(raw, k.Public(), kid, issuer.RealmIssuer(s.issuerBase(r), realm), s.now())
	return errors.Is(err, issuer.ErrType)
}
