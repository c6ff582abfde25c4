package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// A proof's jwk is read here, by the package itself, into the key and its
// RFC 7638 thumbprint, under the same rules go-jose applies to a public
// JWK (RFC 7517, 7518 section 6, RFC 8037): EC coordinates of exactly the
// curve's size and on the curve, an Ed25519 key of 32 bytes that is not of
// small order, an RSA exponent from 2 to 2^31-1 (the Verifier then takes
// 65537 only, and bounds the modulus: keyFitsAlgorithm). The thumbprint is
// computed from the decoded key, so two encodings of one key have one
// thumbprint. Nothing is cached: the key is a function of the proof alone.

// jwkNames are the members of a jwk Verify reads; from jwkPrivate on, the
// members that carry private or secret key material (RFC 7518 section 6,
// RFC 8037, and "priv" of the AKP key type), refused whatever their value.
var jwkNames = []string{"kty", "crv", "x", "y", "n", "e", "d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"}

const (
	jwkKty = iota
	jwkCrv
	jwkX
	jwkY
	jwkN
	jwkE
	jwkPrivate
)

// jwkFields holds the members of one jwk while it is read: the decoded
// octets of x, y, n and e, and the strings kty and crv. Its buffers are
// reused from proof to proof (see scratch).
type jwkFields struct {
	present       [jwkPrivate]bool
	kty, crv      []byte
	x, y, n, e    []byte
	private       bool
	unquote       []byte // scratch space for a member with escapes
	notString     bool   // kty, crv, x, y, n or e holds something else than a string
	undecodable   bool   // x, y, n or e is not base64url
	thumbprintBuf []byte
}

// member reads the value of jwk member jwkNames[i] into f.
func (f *jwkFields) member(r *strictjson.Reader, i int) error {
	if i >= jwkPrivate {
		f.private = true
		_, err := r.Checked()
		return err
	}
	f.present[i] = true
	if r.Kind() != '"' {
		f.notString = true
		_, err := r.Checked()
		return err
	}
	b, err := r.Bytes(&f.unquote)
	if err != nil {
		return err
	}
	switch i {
	case jwkKty:
		f.kty = append(f.kty[:0], b...)
	case jwkCrv:
		f.crv = append(f.crv[:0], b...)
	case jwkX:
		f.x, f.undecodable = decodeMember(f.x, b, f.undecodable)
	case jwkY:
		f.y, f.undecodable = decodeMember(f.y, b, f.undecodable)
	case jwkN:
		f.n, f.undecodable = decodeMember(f.n, b, f.undecodable)
	case jwkE:
		f.e, f.undecodable = decodeMember(f.e, b, f.undecodable)
	}
	return nil
}

// readJWK reads raw, a jwk the header walk has checked for duplicate
// members, under the case rule, into f. Its errors are ErrKey (a member in
// another case, a value of the wrong type) or ErrPrivateKey.
func readJWK(r *strictjson.Reader, raw strictjson.Value, f *jwkFields) error {
	if raw.Kind() != '{' {
		return fmt.Errorf("%w: jwk: not a JSON object", ErrKey)
	}
	*f = jwkFields{kty: f.kty[:0], crv: f.crv[:0], x: f.x[:0], y: f.y[:0], n: f.n[:0], e: f.e[:0],
		unquote: f.unquote[:0], thumbprintBuf: f.thumbprintBuf[:0]}
	r.Reset(raw)
	err := r.Object()
	for i, ok := r.Next(jwkNames, &err); ok; i, ok = r.Next(jwkNames, &err) {
		err = f.member(r, i)
	}
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return fmt.Errorf("%w: jwk: %s", ErrKey, strictjson.Problem(err))
	}
	if f.private {
		return ErrPrivateKey
	}
	return nil
}

// decodeMember decodes the base64url value of a key member into dst, as
// go-jose does: unpadded (RFC 7515 section 2), so a trailing '=' makes the
// member undecodable; line breaks are ignored, as by encoding/base64.
func decodeMember(dst, b []byte, failed bool) ([]byte, bool) {
	out, err := base64.RawURLEncoding.AppendDecode(dst[:0], b)
	return out, failed || err != nil
}

// publicKey returns the key f describes and its RFC 7638 thumbprint,
// base64url. Its errors match ErrKey.
func (f *jwkFields) publicKey() (crypto.PublicKey, string, error) {
	if f.notString {
		return nil, "", fmt.Errorf("%w: a jwk member is not a string", ErrKey)
	}
	if f.undecodable {
		return nil, "", fmt.Errorf("%w: a jwk member is not base64url", ErrKey)
	}
	tp := f.thumbprintBuf[:0]
	var pub crypto.PublicKey
	switch string(f.kty) {
	case "EC":
		var curve elliptic.Curve
		switch string(f.crv) {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, "", fmt.Errorf("%w: unsupported EC curve", ErrKey)
		}
		size := (curve.Params().BitSize + 7) / 8
		if !f.present[jwkX] || !f.present[jwkY] || len(f.x) != size || len(f.y) != size {
			return nil, "", fmt.Errorf("%w: EC coordinates missing or of the wrong size", ErrKey)
		}
		point := append(append(append(f.unquote[:0], 4), f.x...), f.y...)
		f.unquote = point
		k, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return nil, "", fmt.Errorf("%w: EC point not on the curve", ErrKey)
		}
		pub = k
		tp = append(tp, `{"crv":"`...)
		tp = append(tp, f.crv...)
		tp = append(tp, `","kty":"EC","x":"`...)
		tp = base64.RawURLEncoding.AppendEncode(tp, f.x)
		tp = append(tp, `","y":"`...)
		tp = base64.RawURLEncoding.AppendEncode(tp, f.y)
		tp = append(tp, `"}`...)
	case "OKP":
		if string(f.crv) != "Ed25519" {
			return nil, "", fmt.Errorf("%w: unsupported OKP curve", ErrKey)
		}
		if !f.present[jwkX] || len(f.x) != ed25519.PublicKeySize {
			return nil, "", fmt.Errorf("%w: Ed25519 key missing or of the wrong size", ErrKey)
		}
		if _, weak := weakEd25519Keys[[ed25519.PublicKeySize]byte(f.x)]; weak {
			return nil, "", fmt.Errorf("%w: Ed25519 key of small order", ErrKey)
		}
		pub = ed25519.PublicKey(append([]byte(nil), f.x...))
		tp = append(tp, `{"crv":"Ed25519","kty":"OKP","x":"`...)
		tp = base64.RawURLEncoding.AppendEncode(tp, f.x)
		tp = append(tp, `"}`...)
	case "RSA":
		if !f.present[jwkN] || !f.present[jwkE] {
			return nil, "", fmt.Errorf("%w: RSA modulus or exponent missing", ErrKey)
		}
		n, e := trimZeros(f.n), trimZeros(f.e)
		if len(n) == 0 || len(n) > maxRSABits/8 || len(e) == 0 || len(e) > 4 {
			return nil, "", fmt.Errorf("%w: RSA modulus or exponent out of range", ErrKey)
		}
		var exp uint64
		for _, b := range e {
			exp = exp<<8 | uint64(b)
		}
		if exp < 2 || exp > 1<<31-1 {
			return nil, "", fmt.Errorf("%w: RSA exponent out of range", ErrKey)
		}
		pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp)}
		tp = append(tp, `{"e":"`...)
		tp = base64.RawURLEncoding.AppendEncode(tp, e)
		tp = append(tp, `","kty":"RSA","n":"`...)
		tp = base64.RawURLEncoding.AppendEncode(tp, n)
		tp = append(tp, `"}`...)
	case "oct":
		return nil, "", fmt.Errorf("%w: symmetric jwk", ErrKey)
	default:
		return nil, "", fmt.Errorf("%w: unsupported or missing kty", ErrKey)
	}
	f.thumbprintBuf = tp
	sum := sha256.Sum256(tp)
	return pub, base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// trimZeros drops the leading zero octets of a big-endian integer.
func trimZeros(b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	return b
}

// weakEd25519Keys are the encodings of the Ed25519 points of small order
// that crypto/ed25519 accepts as public keys; a signature by such a "key"
// says nothing about who made it. The list is the one go-jose v4 refuses
// (jwk.go, Apache License 2.0).
var weakEd25519Keys = map[[ed25519.PublicKeySize]byte]struct{}{
	{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}: {},
	{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}: {},
	{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}: {},
	{0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}: {},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05}: {},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x85}: {},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a}: {},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0xfa}: {},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}: {},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}: {},
	{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}: {},
	{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}: {},
	{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}: {},
	{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}: {},
}
