package dpop

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// sign signs a proof's signing input with key for alg, in the form RFC 7518
// section 3 gives each algorithm's JWS signature. key may be any
// crypto.Signer (a software key, an HSM or KMS handle, a key that cannot be
// exported). PS256 uses a salt as long as the hash, as RFC 7518 section 3.5
// requires (go-jose's cryptosigner uses the maximum length, which strict
// verifiers reject). A signature must be size bytes (the algorithm's, or
// the RSA modulus's) and an ECDSA signature's values fit the curve: a
// crypto.Signer of another key or a broken one fails here, clearly, rather
// than at the server.
func sign(key crypto.Signer, alg jose.SignatureAlgorithm, size int, input []byte) ([]byte, error) {
	sig, err := signWith(key, alg, input)
	if err == nil && len(sig) != size {
		// A crypto.Signer of another key, or a broken one: a proof that
		// no server would accept is an error here, where it is clear.
		return nil, fmt.Errorf("dpop: signer returned a %d-byte %s signature, want %d bytes", len(sig), alg, size)
	}
	return sig, err
}

// signWith is sign without the size check.
func signWith(key crypto.Signer, alg jose.SignatureAlgorithm, input []byte) ([]byte, error) {
	switch alg {
	case jose.ES256:
		digest := sha256.Sum256(input)
		der, err := key.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("dpop: signing: %w", err)
		}
		return ecdsaDERToJWS(der, 32)
	case jose.EdDSA:
		sig, err := key.Sign(rand.Reader, input, crypto.Hash(0))
		if err != nil {
			return nil, fmt.Errorf("dpop: signing: %w", err)
		}
		return sig, nil
	case jose.PS256:
		digest := sha256.Sum256(input)
		sig, err := key.Sign(rand.Reader, digest[:], &rsa.PSSOptions{
			SaltLength: rsa.PSSSaltLengthEqualsHash,
			Hash:       crypto.SHA256,
		})
		if err != nil {
			return nil, fmt.Errorf("dpop: signing: %w", err)
		}
		return sig, nil
	default:
		return nil, fmt.Errorf("dpop: signer cannot sign %s", alg)
	}
}

// signatureSize is the size in bytes of the signatures pub's key makes for
// alg (for RSA, the modulus's), so that a proof's buffer is made once.
func signatureSize(alg jose.SignatureAlgorithm, pub crypto.PublicKey) int {
	if k, ok := pub.(*rsa.PublicKey); ok && alg == jose.PS256 {
		return k.Size()
	}
	return 64 // ES256's R||S and Ed25519's signature
}

// appendJSONString appends s to b as a JSON string. The strings of a proof
// (method, htu, nonce) are printable ASCII in practice and are copied as
// they are; any other goes through encoding/json, which escapes it and
// replaces invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ecdsaDERToJWS converts the ASN.1 DER signature a crypto.Signer returns for
// ECDSA (a SEQUENCE of the two INTEGERs r and s) into the fixed-size R||S
// form of RFC 7518 section 3.4. It reads the DER by hand, strictly (minimal
// lengths and integers, nothing trailing), instead of through encoding/asn1
// and math/big, which cost a proof a few microseconds and six allocations.
func ecdsaDERToJWS(der []byte, size int) ([]byte, error) {
	seq, rest, ok := derElement(der, 0x30)
	if !ok || len(rest) != 0 {
		return nil, errMalformedECDSA
	}
	r, seq, okR := derElement(seq, 0x02)
	s, seq, okS := derElement(seq, 0x02)
	if !okR || !okS || len(seq) != 0 || !derMinimalInt(r) || !derMinimalInt(s) {
		return nil, errMalformedECDSA
	}
	out := make([]byte, 2*size)
	if !putPositive(out[:size], r) || !putPositive(out[size:], s) {
		return nil, errors.New("dpop: signer returned an out-of-range ecdsa signature")
	}
	return out, nil
}

var errMalformedECDSA = errors.New("dpop: signer returned a malformed ecdsa signature")

// derElement splits the DER element of the given tag at the start of b
// into its contents and what follows it. Lengths must be minimal: the
// short form below 128, the one-byte long form from 128 to 255 (an ECDSA
// signature of any curve this package accepts is far shorter).
func derElement(b []byte, tag byte) (contents, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != tag {
		return nil, nil, false
	}
	n, b := int(b[1]), b[2:]
	if n >= 0x80 {
		if n != 0x81 || len(b) == 0 || b[0] < 0x80 {
			return nil, nil, false
		}
		n, b = int(b[0]), b[1:]
	}
	if len(b) < n {
		return nil, nil, false
	}
	return b[:n], b[n:], true
}

// derMinimalInt reports whether v is a minimally encoded DER INTEGER: not
// empty, and no leading byte that only repeats the sign of the next.
func derMinimalInt(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	return len(v) == 1 || !(v[0] == 0x00 && v[1]&0x80 == 0) && !(v[0] == 0xff && v[1]&0x80 != 0)
}

// putPositive writes the DER INTEGER v into out, right-aligned, and reports
// whether v is positive and fits.
func putPositive(out, v []byte) bool {
	if v[0]&0x80 != 0 {
		return false // negative
	}
	for len(v) > 0 && v[0] == 0 {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > len(out) {
		return false // zero, or wider than the curve
	}
	copy(out[len(out)-len(v):], v)
	return true
}
