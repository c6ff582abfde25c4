package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// RSA modulus sizes. RFC 7518 sections 3.3 and 3.5 require at least 2048
// bits. A Signer signs with keys of up to DefaultMaxRSABits, the bound of
// a Verifier made without WithMaxRSABits, so that every Verifier so made
// accepts every proof a Signer makes; WithMaxRSABits raises a Verifier's
// bound, to at most maxRSABits, for other clients' larger keys. The upper
// bounds keep the cost of one verification bounded.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// DefaultMaxRSABits is the largest RSA modulus, in bits, that a Verifier
// accepts without [WithMaxRSABits] (go-jose's bound) and that [NewSigner]
// takes: an unauthenticated proof's key sets the cost of its
// verification, and a modulus of 8,192 bits costs about eight times one of
// 4,096.
const DefaultMaxRSABits = 4096

// rsaExponent is the one RSA public exponent signed and verified: every
// common key generator's (crypto/rsa, OpenSSL, WebCrypto's default). A
// larger one multiplies the cost of a verification (2^31-1 takes 61
// modular multiplications where 65537 takes 17).
const rsaExponent = 65537

// signerAlgorithm picks the algorithm a Signer uses for pub: ES256 for
// P-256, EdDSA for Ed25519, PS256 for RSA of 2048 to DefaultMaxRSABits
// bits.
func signerAlgorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return "", errors.New("dpop: empty ecdsa public key")
		}
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("dpop: unsupported ecdsa curve %s: only P-256 is supported", curveName(k.Curve))
		}
		if _, err := k.Bytes(); err != nil {
			return "", errors.New("dpop: empty or invalid ecdsa public key")
		}
		return jose.ES256, nil
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return "", errors.New("dpop: invalid ed25519 public key")
		}
		return jose.EdDSA, nil
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return "", errors.New("dpop: empty rsa public key")
		}
		if bits := k.N.BitLen(); bits < minRSABits || bits > DefaultMaxRSABits {
			return "", fmt.Errorf("dpop: rsa key of %d bits: want %d to %d bits (DefaultMaxRSABits, the most a Verifier accepts without WithMaxRSABits), or a P-256 or Ed25519 key (GenerateKey)",
				bits, minRSABits, DefaultMaxRSABits)
		}
		if k.E != rsaExponent {
			return "", fmt.Errorf("dpop: rsa key with public exponent %d: want %d, the only one a Verifier accepts", k.E, rsaExponent)
		}
		return jose.PS256, nil
	case nil:
		return "", errors.New("dpop: signer has no public key")
	default:
		return "", fmt.Errorf("dpop: unsupported key type %T: want a P-256, Ed25519 or RSA key", pub)
	}
}

func curveName(c elliptic.Curve) string {
	if c == nil || c.Params() == nil {
		return "<nil>"
	}
	return c.Params().Name
}
