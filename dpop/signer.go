package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/orgauthz/orgauthz/internal/signerid"
)

// proofType is the "typ" header of every DPoP proof (RFC 9449 section 4.2).
const proofType = "dpop+jwt"

// jtiBytes is the number of random bytes in a proof's "jti": 128 bits, above
// the 96 bits RFC 9449 section 4.2 asks for.
const jtiBytes = 16

// Signer makes DPoP proofs (RFC 9449) with one key: the client side of DPoP.
//
// A Signer is immutable once built and safe for concurrent use by multiple
// goroutines, provided the crypto.Signer it wraps is (the standard library's
// keys are). The zero value is not usable: build one with [NewSigner] or
// [GenerateKey].
type Signer struct {
	alg jose.SignatureAlgorithm
	key crypto.Signer
	// header is the base64url form of the protected header, the same for
	// every proof of the key: encoded once, in NewSigner.
	header     string
	sigSize    int             // bytes of one signature
	jwk        jose.JSONWebKey // public key only
	thumbprint string
	now        func() time.Time
	lastHTU    *atomic.Pointer[htuMemo] // shared with the copies WithClock makes
	inMemory   bool                     // key is a standard library private key
	// signer is what the pep and authzen clients keep the key's bound of
	// signatures at once under (signerIdentity), given to them through
	// internal/signerid: copies WithClock makes keep the original's.
	signer any
}

func init() {
	signerid.Of = func(s any) any { return s.(*Signer).signer }
}

// ownSigner is the identity of a Signer whose key cannot be compared: one
// per NewSigner, shared by the copies WithClock makes. It is not empty,
// so that two of them are never the same pointer.
type ownSigner struct{ _ byte }

// signerIdentity returns what a Signer of key is known by to the bound of
// signatures at once: what is one signer, never what claims one public key
// (key.Public proves nothing; no signature has been checked). It is key
// itself when key is comparable and equal to itself, so that NewSigner
// called again on the same key value shares its bound; else a new
// identity of the Signer's own. Comparing keys never panics: a comparable
// type holding an uncomparable value (a slice in an interface field) is
// taken as uncomparable.
func signerIdentity(key crypto.Signer) any {
	if v := reflect.ValueOf(key); v.Comparable() && v.Equal(v) {
		return key
	}
	return new(ownSigner)
}

// htuMemo is the last url a Signer normalised and its htu: a client sends
// its proofs to one endpoint, and parsing the url is a tenth of a proof's
// own cost beside the signature. It is immutable and replaced whole, so a
// concurrent proof for another url costs a recomputation, never a wrong
// value. The url is kept as a copy of its own, never as a slice of the
// caller's larger string. Access tokens are not remembered: hashing one
// is cheaper than a Signer that holds a token after the client forgot it.
type htuMemo struct{ url, htu string }

// htu returns HTU(url), remembered for the next proof.
func (s *Signer) htu(url string) (string, error) {
	if m := s.lastHTU.Load(); m != nil && m.url == url {
		return m.htu, nil
	}
	htu, err := HTU(url)
	if err == nil {
		s.lastHTU.Store(&htuMemo{url: strings.Clone(url), htu: htu})
	}
	return htu, err
}

// NewSigner returns a Signer for key. The algorithm follows from the key: ES256
// for an ECDSA P-256 key, EdDSA for an Ed25519 key, PS256 for an RSA key of
// 2048 to 4096 bits (DefaultMaxRSABits, the most a Verifier accepts
// without WithMaxRSABits) with public exponent 65537, so that every
// Verifier accepts its proofs. Any other key type, curve, size or exponent
// is an error that says which keys it takes, as is a nil key.
//
// key may be any crypto.Signer, including one whose private half cannot be
// exported (an HSM, a KMS, a platform key store): the Signer only calls
// key.Public once and key.Sign for every proof. For ECDSA, key.Sign must
// return an ASN.1 DER signature, as crypto.Signer requires. NewSigner does not
// check that key.Sign really matches key.Public.
func NewSigner(key crypto.Signer) (*Signer, error) {
	if key == nil {
		return nil, errors.New("dpop: nil key")
	}
	pub := key.Public()
	alg, err := signerAlgorithm(pub)
	if err != nil {
		return nil, err
	}
	jwk := jose.JSONWebKey{Key: pub}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("dpop: thumbprint: %w", err)
	}
	header, err := proofHeader(alg, jwk)
	if err != nil {
		return nil, err
	}
	return &Signer{
		alg:        alg,
		key:        key,
		header:     header,
		sigSize:    signatureSize(alg, pub),
		jwk:        jwk,
		thumbprint: base64.RawURLEncoding.EncodeToString(tp),
		now:        time.Now,
		lastHTU:    new(atomic.Pointer[htuMemo]),
		inMemory:   inMemory(key),
		signer:     signerIdentity(key),
	}, nil
}

// inMemory reports whether key is one of the standard library's private
// keys, whose Sign computes in this process.
func inMemory(key crypto.Signer) bool {
	switch key.(type) {
	case *ecdsa.PrivateKey, ed25519.PrivateKey, *ed25519.PrivateKey, *rsa.PrivateKey:
		return true
	}
	return false
}

// GenerateKey returns a Signer for a new ECDSA P-256 key (ES256) generated from
// crypto/rand. The private key lives only inside the Signer.
func GenerateKey() (*Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("dpop: generating key: %w", err)
	}
	return NewSigner(key)
}

// WithClock returns a copy of s that takes the "iat" of its proofs from now
// instead of time.Now; s itself is unchanged. A nil now restores time.Now. It
// exists for tests and for clients that correct their clock against a
// server's; production code normally never calls it. The copy signs with
// the same key: the pep and authzen clients count its signatures against
// the one bound of signatures at once of s's signer, shared with every
// Signer NewSigner made of the same crypto.Signer value when that value is
// comparable (==), and with s and its other copies only when it is not.
// A different crypto.Signer claiming the same public key never shares it.
func (s *Signer) WithClock(now func() time.Time) *Signer {
	c := *s
	if now == nil {
		now = time.Now
	}
	c.now = now
	return &c
}

// Algorithm returns the JWS algorithm of s's proofs: "ES256", "EdDSA" or
// "PS256".
func (s *Signer) Algorithm() string { return string(s.alg) }

// Thumbprint returns the RFC 7638 JWK SHA-256 thumbprint of s's public key,
// base64url-encoded without padding: the value an authorization server puts in
// a bound token's cnf.jkt and the dpop_jkt authorization request parameter.
func (s *Signer) Thumbprint() string { return s.thumbprint }

// InMemory reports whether s's key is a private key held in this process's
// memory: an *ecdsa.PrivateKey (as GenerateKey makes), an
// ed25519.PrivateKey or an *rsa.PrivateKey, whose signatures take
// microseconds and cannot block. It is false for any other crypto.Signer
// (an HSM, a KMS, a platform key store, or any type that wraps a key):
// its Sign may wait on a device or the network and takes no context, so a
// caller with a deadline, as the pep and authzen clients are, signs with
// it on a goroutine of its own and waits only until the deadline.
func (s *Signer) InMemory() bool { return s.inMemory }

// PublicJWK returns s's public key as a go-jose JSON Web Key; json.Marshal
// turns it into the JWK that is embedded in every proof (kty and the public
// parameters only, no kid, alg or private members). The Key field holds a
// crypto.PublicKey (*ecdsa.PublicKey, ed25519.PublicKey or *rsa.PublicKey)
// shared with s: callers must not modify it.
func (s *Signer) PublicJWK() jose.JSONWebKey { return s.jwk }

// proofHeader returns the base64url-encoded protected header of every
// proof made with jwk: typ "dpop+jwt", alg and the public jwk.
func proofHeader(alg jose.SignatureAlgorithm, jwk jose.JSONWebKey) (string, error) {
	h, err := json.Marshal(struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK jose.JSONWebKey `json:"jwk"`
	}{proofType, string(alg), jwk})
	if err != nil {
		return "", fmt.Errorf("dpop: encoding the proof header: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(h), nil
}

// Proof returns a DPoP proof for one HTTP request, to send as the value of its
// DPoP header: a compact JWS with header typ "dpop+jwt", alg and the public
// jwk, and claims jti (128 random bits, base64url), htm (method, as given),
// htu ([HTU] of url: no query or fragment), iat (now), ath ([TokenHash] of
// accessToken, present when accessToken is not empty) and nonce (present when
// not empty: the latest DPoP-Nonce the server sent).
//
// An ES256 proof's signature is always the low-S form (s at most n/2, the
// one that verifiers refusing high-S signatures accept), whatever the key
// returned.
//
// Every call makes a new proof; a proof must not be sent twice. method must
// not be empty (net/http's "" meaning GET has to be resolved by the caller).
// Errors: an empty method, a url [HTU] rejects (wrapping [ErrURL]), or a
// failure of the underlying key. Error messages never contain accessToken.
// Proof is safe for concurrent use.
func (s *Signer) Proof(method, url, accessToken, nonce string) (string, error) {
	if s == nil || s.key == nil {
		return "", errors.New("dpop: Signer not initialised: use NewSigner")
	}
	if method == "" {
		return "", errors.New("dpop: empty http method")
	}
	htu, err := s.htu(url)
	if err != nil {
		return "", err
	}
	var id [jtiBytes]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("dpop: jti: %w", err)
	}

	// The claims, in the order RFC 9449 section 4.2 lists them, on a
	// stack buffer that the common proof fits in.
	var buf [512]byte
	claims := append(buf[:0], `{"jti":"`...)
	claims = base64.RawURLEncoding.AppendEncode(claims, id[:])
	claims = append(claims, `","htm":`...)
	claims = appendJSONString(claims, method)
	claims = append(claims, `,"htu":`...)
	claims = appendJSONString(claims, htu)
	claims = append(claims, `,"iat":`...)
	claims = strconv.AppendInt(claims, s.now().Unix(), 10)
	if accessToken != "" {
		ath := sha256.Sum256([]byte(accessToken))
		claims = append(claims, `,"ath":"`...)
		claims = base64.RawURLEncoding.AppendEncode(claims, ath[:])
		claims = append(claims, '"')
	}
	if nonce != "" {
		claims = append(claims, `,"nonce":`...)
		claims = appendJSONString(claims, nonce)
	}
	claims = append(claims, '}')

	// header.claims, signed, then .signature: one allocation for the
	// proof itself, sized for the largest signature of the algorithm.
	enc := base64.RawURLEncoding
	jws := make([]byte, 0, len(s.header)+1+enc.EncodedLen(len(claims))+1+enc.EncodedLen(s.sigSize))
	jws = append(jws, s.header...)
	jws = append(jws, '.')
	jws = enc.AppendEncode(jws, claims)
	sig, err := sign(s.key, s.alg, s.sigSize, jws)
	if err != nil {
		return "", err
	}
	jws = append(jws, '.')
	jws = enc.AppendEncode(jws, sig)
	return string(jws), nil
}
