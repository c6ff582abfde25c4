package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
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
	alg        jose.SignatureAlgorithm
	jose       jose.Signer
	jwk        jose.JSONWebKey // public key only
	thumbprint string
	now        func() time.Time
}

// NewSigner returns a Signer for key. The algorithm follows from the key: ES256
// for an ECDSA P-256 key, EdDSA for an Ed25519 key, PS256 for an RSA key of
// 2048 to 8192 bits. Any other key type, curve or size is an error, as is a
// nil key.
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
	opaque := &opaqueSigner{key: key, alg: alg, jwk: &jose.JSONWebKey{Key: pub}}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(proofType)
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: opaque}, opts)
	if err != nil {
		return nil, fmt.Errorf("dpop: %w", err)
	}
	return &Signer{
		alg:        alg,
		jose:       js,
		jwk:        jwk,
		thumbprint: base64.RawURLEncoding.EncodeToString(tp),
		now:        time.Now,
	}, nil
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
// server's; production code normally never calls it.
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

// PublicJWK returns s's public key as a go-jose JSON Web Key; json.Marshal
// turns it into the JWK that is embedded in every proof (kty and the public
// parameters only, no kid, alg or private members). The Key field holds a
// crypto.PublicKey (*ecdsa.PublicKey, ed25519.PublicKey or *rsa.PublicKey)
// shared with s: callers must not modify it.
func (s *Signer) PublicJWK() jose.JSONWebKey { return s.jwk }

// proofClaims is the claim set of a proof, in the order RFC 9449 lists it.
type proofClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// Proof returns a DPoP proof for one HTTP request, to send as the value of its
// DPoP header: a compact JWS with header typ "dpop+jwt", alg and the public
// jwk, and claims jti (128 random bits, base64url), htm (method, as given),
// htu ([HTU] of url: no query or fragment), iat (now), ath ([TokenHash] of
// accessToken, present when accessToken is not empty) and nonce (present when
// not empty: the latest DPoP-Nonce the server sent).
//
// Every call makes a new proof; a proof must not be sent twice. method must
// not be empty (net/http's "" meaning GET has to be resolved by the caller).
// Errors: an empty method, a url [HTU] rejects (wrapping [ErrURL]), or a
// failure of the underlying key. Error messages never contain accessToken.
// Proof is safe for concurrent use.
func (s *Signer) Proof(method, url, accessToken, nonce string) (string, error) {
	if s == nil || s.jose == nil {
		return "", errors.New("dpop: Signer not initialised: use NewSigner")
	}
	if method == "" {
		return "", errors.New("dpop: empty http method")
	}
	htu, err := HTU(url)
	if err != nil {
		return "", err
	}
	var id [jtiBytes]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("dpop: jti: %w", err)
	}
	c := proofClaims{
		JTI:   base64.RawURLEncoding.EncodeToString(id[:]),
		HTM:   method,
		HTU:   htu,
		IAT:   s.now().Unix(),
		Nonce: nonce,
	}
	if accessToken != "" {
		c.ATH = TokenHash(accessToken)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("dpop: encoding claims: %w", err)
	}
	jws, err := s.jose.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("dpop: signing proof: %w", err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("dpop: serialising proof: %w", err)
	}
	return out, nil
}
