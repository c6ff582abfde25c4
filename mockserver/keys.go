package mockserver

import (
	"crypto"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"sync"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// This file says which key signs what. Every realm has an RSA key, made on
// first use, that signs its ID tokens and, by default, its access tokens
// (RS256, as Keycloak's realms do), and a P-256 key that signs its access
// tokens instead with WithAccessTokenAlgorithm("ES256"). The JWKS lists
// the keys in use, discovery their algorithms.

// keySource makes the realms' signing keys: random ones, or, with a seed
// (WithKeySeed), ones derived from it and the realm's name.
type keySource struct {
	seed []byte
}

// signing returns a P-256 signing key for realm and its key id.
func (k keySource) signing(realm string) (crypto.Signer, string, error) {
	if k.seed == nil {
		return issuer.GenerateKey()
	}
	return issuer.SeededKey(k.seed, realm)
}

// rsa returns the function that makes realm's RSA key on first use.
func (k keySource) rsa(realm string) func() (crypto.Signer, string, error) {
	if k.seed == nil {
		return issuer.GenerateRSAKey
	}
	return func() (crypto.Signer, string, error) { return seededRSA.key(k.seed, realm) }
}

// seededRSA remembers the RSA keys derived from a seed. Deriving one is a
// search for two 1,024-bit primes (100 ms of CPU, several times that under
// -race), and every server of the same seed derives the same key for a
// realm: the replicas a test runs in one process, and every restart. A key
// derived once is the one every later derivation would give, so the
// servers still share exactly what the seed makes them share. It holds at
// most seededRSAKeys keys (about 2 KB each), forgetting them all when full.
var seededRSA = seededRSAMemo{keys: map[[sha256.Size]byte]seededRSAKey{}}

const seededRSAKeys = 64

type seededRSAKey struct {
	signer crypto.Signer
	kid    string
}

type seededRSAMemo struct {
	mu   sync.Mutex
	keys map[[sha256.Size]byte]seededRSAKey // by the hash of seed and realm
}

// key returns issuer.SeededRSAKey(seed, realm), derived at most once while
// remembered. Two first calls at once may both derive it.
func (m *seededRSAMemo) key(seed []byte, realm string) (crypto.Signer, string, error) {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(seed)) + ":"))
	h.Write(seed)
	h.Write([]byte(realm))
	var id [sha256.Size]byte
	h.Sum(id[:0])
	m.mu.Lock()
	k, ok := m.keys[id]
	m.mu.Unlock()
	if ok {
		return k.signer, k.kid, nil
	}
	signer, kid, err := issuer.SeededRSAKey(seed, realm)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	if len(m.keys) >= seededRSAKeys {
		clear(m.keys)
	}
	m.keys[id] = seededRSAKey{signer, kid}
	m.mu.Unlock()
	return signer, kid, nil
}

// accessKey returns the key that signs rm's access tokens and its key id,
// making the RSA key if this is the realm's first RS256 token.
func (s *Server) accessKey(rm *store.Realm) (crypto.Signer, string, error) {
	if s.accessAlg == issuer.ES256 {
		return rm.SigningKey, rm.KeyID, nil
	}
	return rm.RSAKey(s.keys.rsa(rm.Name))
}

// accessVerificationKey returns the public key that rm's access tokens
// must be signed by and its key id. Without a key seed it never makes a
// key: before rm's first RS256 token there is none, and ok is false (no
// token can verify); it takes no lock. With a seed (WithKeySeed) another
// replica may have signed with the key this one has not derived yet: it
// derives it, once per realm, as signing would.
func (s *Server) accessVerificationKey(rm *store.Realm) (pub crypto.PublicKey, kid string, ok bool) {
	if s.accessAlg == issuer.ES256 {
		return rm.SigningKey.Public(), rm.KeyID, true
	}
	k, kid, ok := s.loadRSAKey(rm)
	if !ok {
		return nil, "", false
	}
	return k.Public(), kid, true
}

// loadRSAKey returns rm's RSA key if it was made, or, with a key seed, once
// derived (see accessVerificationKey).
func (s *Server) loadRSAKey(rm *store.Realm) (crypto.Signer, string, bool) {
	k, kid, ok := rm.LoadRSAKey()
	if !ok && s.keys.seed != nil {
		var err error
		k, kid, err = rm.RSAKey(s.keys.rsa(rm.Name))
		ok = err == nil
	}
	return k, kid, ok
}

// publicKeys returns rm's JWKS: the RSA key (ID tokens, and access tokens
// by default) and, when access tokens are ES256, the P-256 key.
func (s *Server) publicKeys(rm *store.Realm) (jose.JSONWebKeySet, error) {
	k, kid, err := rm.RSAKey(s.keys.rsa(rm.Name))
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
	k, kid, ok := s.loadRSAKey(rm)
	if !ok {
		return false
	}
	_, err := issuer.Verify(raw, k.Public(), kid, issuer.RealmIssuer(s.issuerBase(r), realm), s.now())
	return errors.Is(err, issuer.ErrType)
}
