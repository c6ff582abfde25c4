package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"

	"github.com/go-jose/go-jose/v4"
)

// verifySignature reports whether sig is a valid JWS signature (RFC 7518
// section 3, RFC 8037 section 3.1, RFC 9864) by pub over input, the
// proof's "header.payload". keyFitsAlgorithm has made sure pub fits alg.
// ECDSA signatures are the fixed-size R || S of RFC 7518 section 3.4 and
// nothing else; RSASSA-PSS accepts any salt length, as go-jose does.
// der is scratch space for the ASN.1 form of an ECDSA signature.
func verifySignature(alg jose.SignatureAlgorithm, pub crypto.PublicKey, input, sig []byte, der *[]byte) bool {
	var digest [sha512.Size]byte
	var h crypto.Hash
	var sum []byte
	switch alg {
	case jose.ES256, jose.RS256, jose.PS256:
		h, digest = crypto.SHA256, pad(sha256.Sum256(input))
		sum = digest[:sha256.Size]
	case jose.ES384, jose.RS384, jose.PS384:
		h, digest = crypto.SHA384, pad384(sha512.Sum384(input))
		sum = digest[:sha512.Size384]
	case jose.ES512, jose.RS512, jose.PS512:
		h, digest = crypto.SHA512, sha512.Sum512(input)
		sum = digest[:]
	case jose.EdDSA, algEd25519:
		k, ok := pub.(ed25519.PublicKey)
		return ok && ed25519.Verify(k, input, sig)
	default:
		return false
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		*der = appendDERSignature((*der)[:0], sig[:size], sig[size:])
		return ecdsa.VerifyASN1(k, sum, *der)
	case *rsa.PublicKey:
		switch alg {
		case jose.PS256, jose.PS384, jose.PS512:
			return rsa.VerifyPSS(k, h, sum, sig, nil) == nil
		case jose.RS256, jose.RS384, jose.RS512:
			return rsa.VerifyPKCS1v15(k, h, sum, sig) == nil
		}
	}
	return false
}

func pad(s [sha256.Size]byte) (d [sha512.Size]byte) {
	copy(d[:], s[:])
	return d
}

func pad384(s [sha512.Size384]byte) (d [sha512.Size]byte) {
	copy(d[:], s[:])
	return d
}

// appendDERSignature appends the ASN.1 DER form of the ECDSA signature
// (r, s), two big-endian integers, that ecdsa.VerifyASN1 reads:
// SEQUENCE { INTEGER r, INTEGER s }.
func appendDERSignature(dst, r, s []byte) []byte {
	r, s = trimZeros(r), trimZeros(s)
	intLen := func(b []byte) int {
		if len(b) == 0 || b[0]&0x80 != 0 {
			return len(b) + 1 // a zero, or a leading 0x00 to keep it positive
		}
		return len(b)
	}
	body := 2 + intLen(r) + 2 + intLen(s) // P-521: at most 2 * (2 + 67) = 138
	dst = append(dst, 0x30)
	if body >= 0x80 {
		dst = append(dst, 0x81)
	}
	dst = append(dst, byte(body))
	for _, b := range [][]byte{r, s} {
		dst = append(dst, 0x02, byte(intLen(b)))
		if intLen(b) > len(b) {
			dst = append(dst, 0)
		}
		dst = append(dst, b...)
	}
	return dst
}
