// Package issuer mints and validates the reference server's access tokens,
// ES256 JWTs shaped like Keycloak's, and mints its OpenID Connect ID tokens,
// RS256 JWTs (the algorithm OpenID Connect Discovery 1.0 requires every
// provider to support). It knows nothing of HTTP or of the store; callers
// hand it keys, issuer URLs and the current time.
package issuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Algorithm is the signature algorithm of every access token the issuer
// mints.
const Algorithm = jose.ES256

// IDTokenAlgorithm is the signature algorithm of every ID token the issuer
// mints.
const IDTokenAlgorithm = jose.RS256

// idTokenKeyBits is the size of the RSA keys of ID tokens.
const idTokenKeyBits = 2048

// Errors Verify returns. Each names one failed check; all of them mean the
// token must be refused.
var (
	// ErrMalformed reports a token that is not a compact JWS of an accepted algorithm.
	ErrMalformed = errors.New("issuer: malformed token")
	// ErrKey reports a token signed by a key that is not the realm's current key.
	ErrKey = errors.New("issuer: token signed by an unknown key")
	// ErrSignature reports a signature that does not verify.
	ErrSignature = errors.New("issuer: invalid token signature")
	// ErrIssuer reports an iss claim other than the realm's issuer.
	ErrIssuer = errors.New("issuer: token issued by another issuer")
	// ErrExpired reports a token past its exp (or without one).
	ErrExpired = errors.New("issuer: token expired")
	// ErrNotYetValid reports a token used before its nbf.
	ErrNotYetValid = errors.New("issuer: token not yet valid")
)

// Access is the roles block of realm_access and resource_access.
type Access struct {
	Roles []string `json:"roles"`
}

// Confirmation is the cnf claim of a DPoP-bound token (RFC 9449 section 6).
type Confirmation struct {
	JKT string `json:"jkt,omitempty"`
}

// Claims are the claims of an access token.
type Claims struct {
	jwt.Claims
	Type              string            `json:"typ,omitempty"`
	AuthorizedParty   string            `json:"azp,omitempty"`
	PreferredUsername string            `json:"preferred_username,omitempty"`
	Email             string            `json:"email,omitempty"`
	RealmAccess       *Access           `json:"realm_access,omitempty"`
	ResourceAccess    map[string]Access `json:"resource_access,omitempty"`
	// Organization restricts decisions to the assignments of one
	// organization (its id or alias); empty when absent.
	Organization string        `json:"organization,omitempty"`
	Confirmation *Confirmation `json:"cnf,omitempty"`
}

// HasRealmRole reports whether realm_access.roles lists role.
func (c *Claims) HasRealmRole(role string) bool {
	return c.RealmAccess != nil && contains(c.RealmAccess.Roles, role)
}

// HasClientRole reports whether resource_access[client].roles lists role.
func (c *Claims) HasClientRole(client, role string) bool {
	a, ok := c.ResourceAccess[client]
	return ok && contains(a.Roles, role)
}

// JKT returns the thumbprint the token is bound to, or "" for a Bearer token.
func (c *Claims) JKT() string {
	if c.Confirmation == nil {
		return ""
	}
	return c.Confirmation.JKT
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// GenerateKey returns a new P-256 signing key and its key id (the RFC 7638
// thumbprint of its public key).
func GenerateKey() (crypto.Signer, string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("issuer: generate key: %w", err)
	}
	tp, err := (&jose.JSONWebKey{Key: k.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, "", fmt.Errorf("issuer: thumbprint: %w", err)
	}
	return k, base64.RawURLEncoding.EncodeToString(tp), nil
}

// GenerateIDTokenKey returns a new RSA key for signing ID tokens and its key
// id (the RFC 7638 thumbprint of its public key).
func GenerateIDTokenKey() (crypto.Signer, string, error) {
	k, err := rsa.GenerateKey(rand.Reader, idTokenKeyBits)
	if err != nil {
		return nil, "", fmt.Errorf("issuer: generate RSA key: %w", err)
	}
	tp, err := (&jose.JSONWebKey{Key: k.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, "", fmt.Errorf("issuer: thumbprint: %w", err)
	}
	return k, base64.RawURLEncoding.EncodeToString(tp), nil
}

// PublicJWK returns the public JWK of an access-token key, for a JWKS
// document.
func PublicJWK(key crypto.Signer, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: key.Public(), KeyID: kid, Algorithm: string(Algorithm), Use: "sig"}
}

// IDTokenJWK returns the public JWK of an ID-token key, for a JWKS document.
func IDTokenJWK(key crypto.Signer, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: key.Public(), KeyID: kid, Algorithm: string(IDTokenAlgorithm), Use: "sig"}
}

// IDClaims are the claims of an ID token (OpenID Connect Core 1.0 section
// 2): the subject, the client as audience and authorized party, the time of
// authentication, and the user's name and email.
type IDClaims struct {
	jwt.Claims
	AuthTime          *jwt.NumericDate `json:"auth_time,omitempty"`
	AuthorizedParty   string           `json:"azp,omitempty"`
	Nonce             string           `json:"nonce,omitempty"`
	PreferredUsername string           `json:"preferred_username,omitempty"`
	Email             string           `json:"email,omitempty"`
}

// SignIDToken mints an RS256 ID token of c with an RSA key from
// GenerateIDTokenKey, naming kid in its header.
func SignIDToken(key crypto.Signer, kid string, c *IDClaims) (string, error) {
	return sign(IDTokenAlgorithm, key, kid, c)
}

// Sign mints a compact JWS of c with key, naming kid in its header.
func Sign(key crypto.Signer, kid string, c *Claims) (string, error) {
	return sign(Algorithm, key, kid, c)
}

// sign mints a compact JWS of type JWT of claims with key and alg, naming
// kid in its header.
func sign(alg jose.SignatureAlgorithm, key crypto.Signer, kid string, claims any) (string, error) {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("issuer: signer: %w", err)
	}
	raw, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("issuer: sign: %w", err)
	}
	return raw, nil
}

// Verify checks raw against the realm's current key (pub, kid), its issuer
// URL and the time now, and returns its claims. The checks run in this
// order: shape, key id, signature, issuer, then CheckTime.
func Verify(raw string, pub crypto.PublicKey, kid, issuer string, now time.Time) (*Claims, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{Algorithm})
	if err != nil || len(tok.Headers) != 1 {
		return nil, ErrMalformed
	}
	if tok.Headers[0].KeyID != kid {
		return nil, ErrKey
	}
	var c Claims
	if err := tok.Claims(pub, &c); err != nil {
		return nil, ErrSignature
	}
	if c.Issuer != issuer {
		return nil, ErrIssuer
	}
	if err := c.CheckTime(now); err != nil {
		return nil, err
	}
	return &c, nil
}

// CheckTime reports ErrExpired unless now is before the token's exp (a
// token without exp is expired) and ErrNotYetValid when now is before its
// nbf. The issuer's own clock mints every token, so there is no leeway.
// Callers that cache verified claims call it on every use.
func (c *Claims) CheckTime(now time.Time) error {
	if c.Expiry == nil || !now.Before(c.Expiry.Time()) {
		return ErrExpired
	}
	if c.NotBefore != nil && now.Before(c.NotBefore.Time()) {
		return ErrNotYetValid
	}
	return nil
}

// RealmIssuer returns the issuer URL of realm under the server's base URL.
func RealmIssuer(base, realm string) string {
	return strings.TrimSuffix(base, "/") + "/realms/" + realm
}
