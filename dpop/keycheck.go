package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// algEd25519 is the fully-specified name of EdDSA with Ed25519 keys (RFC
// 9864), which current clients such as oauth4webapi and openid-client put in
// their proofs. go-jose does not know it; the Verifier checks the
// signatures of both names itself (verifySignature).
const algEd25519 = jose.SignatureAlgorithm("Ed25519")

// supportedAlgorithms are the JWS algorithms a Verifier can be told to allow:
// asymmetric signature algorithms only. "none" and HS* are absent by design and
// cannot be added.
var supportedAlgorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.ES512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.RS256, jose.RS384, jose.RS512,
	jose.EdDSA, algEd25519,
}

// defaultAlgorithms are allowed by a Verifier built without WithAlgorithms.
// Ed25519 keys are accepted under both of their names.
var defaultAlgorithms = []jose.SignatureAlgorithm{
	jose.ES256, jose.ES384, jose.PS256, jose.RS256, jose.EdDSA, algEd25519,
}

func isSupported(alg jose.SignatureAlgorithm) bool {
	for _, a := range supportedAlgorithms {
		if a == alg {
			return true
		}
	}
	return false
}

// keyFitsAlgorithm reports whether pub may verify signatures made with alg:
// the key type, curve and size all have to fit; an RSA modulus at most
// maxBits, and its exponent 65537.
func keyFitsAlgorithm(alg jose.SignatureAlgorithm, pub crypto.PublicKey, maxBits int) error {
	switch alg {
	case jose.ES256, jose.ES384, jose.ES512:
		k, ok := pub.(*ecdsa.PublicKey)
		if !ok {
			return fmt.Errorf("%w: %s needs an EC key", ErrKey, alg)
		}
		want := elliptic.P256()
		switch alg {
		case jose.ES384:
			want = elliptic.P384()
		case jose.ES512:
			want = elliptic.P521()
		}
		if k.Curve != want {
			return fmt.Errorf("%w: %s needs curve %s", ErrKey, alg, want.Params().Name)
		}
	case jose.PS256, jose.PS384, jose.PS512, jose.RS256, jose.RS384, jose.RS512:
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("%w: %s needs an RSA key", ErrKey, alg)
		}
		if bits := k.N.BitLen(); bits < minRSABits || bits > maxBits {
			return fmt.Errorf("%w: rsa key of %d bits: want %d to %d (WithMaxRSABits)", ErrKey, bits, minRSABits, maxBits)
		}
		if k.E != rsaExponent {
			return fmt.Errorf("%w: rsa public exponent other than %d", ErrKey, rsaExponent)
		}
	case jose.EdDSA, algEd25519:
		if _, ok := pub.(ed25519.PublicKey); !ok {
			return fmt.Errorf("%w: %s needs an Ed25519 key", ErrKey, alg)
		}
	default:
		return fmt.Errorf("%w: %s", ErrAlgorithm, alg)
	}
	return nil
}
