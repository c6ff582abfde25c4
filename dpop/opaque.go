package dpop

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"github.com/go-jose/go-jose/v4"
)

// opaqueSigner adapts any crypto.Signer (a software key, an HSM or KMS handle,
// a key that cannot be exported) to go-jose's OpaqueSigner, for exactly one
// algorithm. go-jose's own cryptosigner package is not used because it signs
// PS256 with the maximum salt length, which RFC 7518 section 3.5 does not
// allow (the salt must be as long as the hash) and which strict verifiers
// reject, and because it does not check the size of ECDSA signature values.
type opaqueSigner struct {
	key crypto.Signer
	alg jose.SignatureAlgorithm
	jwk *jose.JSONWebKey // public key only; never modified after construction
}

var _ jose.OpaqueSigner = (*opaqueSigner)(nil)

func (o *opaqueSigner) Public() *jose.JSONWebKey { return o.jwk }

func (o *opaqueSigner) Algs() []jose.SignatureAlgorithm { return []jose.SignatureAlgorithm{o.alg} }

func (o *opaqueSigner) SignPayload(payload []byte, alg jose.SignatureAlgorithm) ([]byte, error) {
	if alg != o.alg {
		return nil, fmt.Errorf("dpop: signer cannot sign %s", alg)
	}
	switch alg {
	case jose.ES256:
		digest := sha256.Sum256(payload)
		der, err := o.key.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("dpop: signing: %w", err)
		}
		return ecdsaDERToJWS(der, 32)
	case jose.EdDSA:
		sig, err := o.key.Sign(rand.Reader, payload, crypto.Hash(0))
		if err != nil {
			return nil, fmt.Errorf("dpop: signing: %w", err)
		}
		return sig, nil
	case jose.PS256:
		digest := sha256.Sum256(payload)
		sig, err := o.key.Sign(rand.Reader, digest[:], &rsa.PSSOptions{
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

// ecdsaDERToJWS converts the ASN.1 DER signature a crypto.Signer returns for
// ECDSA into the fixed-size R||S form of RFC 7518 section 3.4.
func ecdsaDERToJWS(der []byte, size int) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil || len(rest) != 0 {
		return nil, errors.New("dpop: signer returned a malformed ecdsa signature")
	}
	if sig.R.Sign() <= 0 || sig.S.Sign() <= 0 || sig.R.BitLen() > 8*size || sig.S.BitLen() > 8*size {
		return nil, errors.New("dpop: signer returned an out-of-range ecdsa signature")
	}
	out := make([]byte, 2*size)
	sig.R.FillBytes(out[:size])
	sig.S.FillBytes(out[size:])
	return out, nil
}
