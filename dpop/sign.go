package dpop

import (
	"bytes"
	"crypto"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

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
// than at the server. An ES256 signature is made low-S (p256LowS),
// whatever the crypto.Signer returned.
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
		sig, err := ecdsaDERToJWS(der, 32)
		if err != nil {
			return nil, err
		}
		return sig, p256LowS(sig)
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
		return nil, errOutOfRangeECDSA
	}
	return out, nil
}

var (
	errMalformedECDSA  = errors.New("dpop: signer returned a malformed ecdsa signature")
	errOutOfRangeECDSA = errors.New("dpop: signer returned an out-of-range ecdsa signature")
)

// p256N and p256HalfN are the order n of P-256 and n/2 rounded down,
// big-endian, 32 bytes each.
var p256N, p256HalfN = p256Order()

func p256Order() (n, half [32]byte) {
	order := elliptic.P256().Params().N
	order.FillBytes(n[:])
	new(big.Int).Rsh(order, 1).FillBytes(half[:])
	return n, half
}

// p256LowS makes the ES256 signature sig (R||S, 32 bytes each) low-S, in
// place: an s above n/2 becomes n - s. (r, s) and (r, n - s) both verify,
// so anyone who saw a signature can make the other; a Signer always sends
// the low one, which verifiers that refuse high-S signatures (some do, to
// make ECDSA signatures non-malleable) accept too. It fails when r or s is
// not below n, which no verifier accepts.
func p256LowS(sig []byte) error {
	r, s := sig[:32], sig[32:]
	if bytes.Compare(r, p256N[:]) >= 0 || bytes.Compare(s, p256N[:]) >= 0 {
		return errOutOfRangeECDSA
	}
	if bytes.Compare(s, p256HalfN[:]) <= 0 {
		return nil
	}
	var borrow uint
	for i := len(s) - 1; i >= 0; i-- { // s = n - s, byte by byte
		d := uint(p256N[i]) - uint(s[i]) - borrow
		s[i], borrow = byte(d), (d>>8)&1
	}
	return nil
}

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
