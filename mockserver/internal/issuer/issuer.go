// Package issuer mints and validates the reference server's access tokens,
// JWTs shaped like Keycloak's, and mints its OpenID Connect ID tokens. A
// token's algorithm is its key's: RS256 for an RSA key (Keycloak's default,
// and the algorithm OpenID Connect Discovery 1.0 requires every provider to
// support), ES256 for a P-256 key. It knows nothing of HTTP or of the
// store; callers hand it keys, issuer URLs and the current time.
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

// The algorithms of the keys the issuer makes: RS256 for RSA keys
// (GenerateRSAKey), ES256 for P-256 keys (GenerateKey).
const (
	RS256 = jose.RS256
	ES256 = jose.ES256
)

// Token types (the typ claim), as Keycloak writes them: an access token is
// "Bearer" (DPoP-bound ones too), an ID token "ID". Verify accepts only
// access tokens, so that an ID token signed by the same key is never taken
// for one.
const (
	TypeAccess = "Bearer"
	TypeID     = "ID"
)

// rsaKeyBits is the size of the RSA keys GenerateRSAKey makes.
const rsaKeyBits = 2048

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
	// ErrType reports a token of the realm (signature and issuer verified)
	// that is not an access token: an ID token (typ "ID").
	ErrType = errors.New("issuer: not an access token")
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
	// Boot names the scope of the refusals of the server process that
	// minted the token: the process itself (a random id) when its
	// refusals are its own memory, or every process sharing a store. A
	// server accepts only the tokens of its own scope (mockserver's
	// boot.go). Keycloak does not write it.
	Boot string `json:"boot,omitempty"`
	// Tenant is the id of the provisioned tenant whose realm minted the
	// token (its incarnation), empty for a realm that is no provisioned
	// tenant: a realm of the same name provisioned again, or by another
	// process, is another tenant and refuses the token (mockserver's
	// boot.go). Keycloak does not write it.
	Tenant string `json:"tenant,omitempty"`
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

// GenerateKey returns a new P-256 signing key, for ES256 tokens, and its
// key id (the RFC 7638 thumbprint of its public key).
func GenerateKey() (crypto.Signer, string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("issuer: generate key: %w", err)
	}
	kid, err := thumbprint(k.Public())
	return k, kid, err
}

// GenerateRSAKey returns a new 2048-bit RSA signing key, for RS256 tokens,
// and its key id (the RFC 7638 thumbprint of its public key). It costs tens
// of milliseconds.
func GenerateRSAKey() (crypto.Signer, string, error) {
	k, err := rsa.GenerateKey(rand.Reader, rsaKeyBits)
	if err != nil {
		return nil, "", fmt.Errorf("issuer: generate RSA key: %w", err)
	}
	kid, err := thumbprint(k.Public())
	return k, kid, err
}

func thumbprint(pub crypto.PublicKey) (string, error) {
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("issuer: thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// AlgorithmOf returns the algorithm of tokens signed by pub's private key:
// RS256 for an RSA key, ES256 for a P-256 key, "" for any other key.
func AlgorithmOf(pub crypto.PublicKey) jose.SignatureAlgorithm {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return RS256
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return ES256
		}
	}
	return ""
}

// PublicJWK returns the public JWK of a signing key, with its algorithm and
// key id, for a JWKS document.
func PublicJWK(key crypto.Signer, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: key.Public(), KeyID: kid, Algorithm: string(AlgorithmOf(key.Public())), Use: "sig"}
}

// IDClaims are the claims of an ID token (OpenID Connect Core 1.0 section
// 2): the subject, the client as audience and authorized party, the time of
// authentication, and the user's name and email.
type IDClaims struct {
	jwt.Claims
	Type              string           `json:"typ,omitempty"` // set to TypeID by SignIDToken
	AuthTime          *jwt.NumericDate `json:"auth_time,omitempty"`
	AuthorizedParty   string           `json:"azp,omitempty"`
	Nonce             string           `json:"nonce,omitempty"`
	PreferredUsername string           `json:"preferred_username,omitempty"`
	Email             string           `json:"email,omitempty"`
}

// SignIDToken mints an ID token of c (its typ set to "ID") with key, an RSA
// key from GenerateRSAKey (OpenID Connect Discovery 1.0 requires RS256 ID
// tokens), naming kid in its header.
func SignIDToken(key crypto.Signer, kid string, c *IDClaims) (string, error) {
	if AlgorithmOf(key.Public()) != RS256 {
		return "", errors.New("issuer: ID tokens are signed with an RSA key")
	}
	c.Type = TypeID
	return sign(key, kid, c)
}

// Sign mints a compact JWS of c with key, in the key's algorithm
// (AlgorithmOf), naming kid in its header. Callers set c.Type: Verify
// accepts only TypeAccess.
func Sign(key crypto.Signer, kid string, c *Claims) (string, error) {
	return sign(key, kid, c)
}

// sign mints a compact JWS of type JWT of claims with key in its
// algorithm, naming kid in its header.
func sign(key crypto.Signer, kid string, claims any) (string, error) {
	alg := AlgorithmOf(key.Public())
	if alg == "" {
		return "", errors.New("issuer: the key is neither RSA nor P-256")
	}
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
// URL and the time now, and returns its claims. Only the key's algorithm
// (AlgorithmOf) is accepted. The checks run in this order: shape, key id,
// signature, issuer, type (an access token: ErrType for an ID token), then
// CheckTime.
func Verify(raw string, pub crypto.PublicKey, kid, issuer string, now time.Time) (*Claims, error) {
	c, err := verifySignature(raw, pub, kid)
	if err != nil {
		return nil, err
	}
	if c.Issuer != issuer {
		return nil, ErrIssuer
	}
	if c.Type != TypeAccess {
		return nil, ErrType
	}
	if err := c.CheckTime(now); err != nil {
		return nil, err
	}
	return c, nil
}

// VerifyOwn checks that raw is an access token signed by the realm's
// current key (pub, kid) under any base URL (an issuer that is
// RealmIssuer(base, realm) for some base: the name a client addressed the
// server by when the token was minted), whatever the time, and returns its
// claims: a token the server minted for realm, live or not. It is what
// deciding to refuse a token needs (revocation), never to serve one
// (Verify). The checks run as Verify's: shape, key id, signature, issuer,
// type; no CheckTime.
func VerifyOwn(raw string, pub crypto.PublicKey, kid, realm string) (*Claims, error) {
	c, err := verifySignature(raw, pub, kid)
	if err != nil {
		return nil, err
	}
	base, ok := strings.CutSuffix(c.Issuer, "/realms/"+realm)
	if !ok || base == "" {
		return nil, ErrIssuer
	}
	if c.Type != TypeAccess {
		return nil, ErrType
	}
	return c, nil
}

// verifySignature checks raw's shape, key id and signature against (pub,
// kid) and returns its claims, which nothing else checked yet.
func verifySignature(raw string, pub crypto.PublicKey, kid string) (*Claims, error) {
	alg := AlgorithmOf(pub)
	if alg == "" {
		return nil, ErrKey
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{alg})
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

// IsRealmIssuer reports whether iss is RealmIssuer(base, realm), without
// building it.
func IsRealmIssuer(iss, base, realm string) bool {
	base = strings.TrimSuffix(base, "/")
	const mid = "/realms/"
	return len(iss) == len(base)+len(mid)+len(realm) && strings.HasPrefix(iss, base) &&
		iss[len(base):len(base)+len(mid)] == mid && iss[len(base)+len(mid):] == realm
}
