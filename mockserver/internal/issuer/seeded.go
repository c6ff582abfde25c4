package issuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"strconv"
)

// This file derives a realm's signing keys from a seed, so that servers
// given the same seed sign with the same keys and accept each other's
// tokens (replicas behind one front).

// MinSeedSize is the shortest seed SeededKey and SeededRSAKey accept.
const MinSeedSize = 16

// errShortSeed is the error for a seed shorter than MinSeedSize.
var errShortSeed = fmt.Errorf("issuer: the key seed must hold at least %d bytes", MinSeedSize)

// derive returns n bytes derived from seed for purpose and realm.
func derive(seed []byte, purpose, realm string, n int) ([]byte, error) {
	return hkdf.Key(sha256.New, seed, nil, "orgauthz mockserver "+purpose+"\x00"+realm, n)
}

// SeededKey returns realm's P-256 signing key derived from seed, and its
// key id: the same seed and realm name give the same key in every process.
func SeededKey(seed []byte, realm string) (crypto.Signer, string, error) {
	if len(seed) < MinSeedSize {
		return nil, "", errShortSeed
	}
	for i := range 16 { // a scalar is out of range with probability 2^-32
		d, err := derive(seed, "p256 "+strconv.Itoa(i), realm, 32)
		if err != nil {
			return nil, "", err
		}
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
		if err != nil {
			continue
		}
		kid, err := thumbprint(k.Public())
		return k, kid, err
	}
	return nil, "", errors.New("issuer: no P-256 key derivable from the seed")
}

// SeededRSAKey returns realm's 2048-bit RSA signing key derived from seed,
// and its key id: the same seed and realm name give the same key in every
// process. Each prime is the first one (with p-1 prime to 65537) from a
// derived odd start with its two top bits set. It costs a few hundred
// milliseconds.
func SeededRSAKey(seed []byte, realm string) (crypto.Signer, string, error) {
	if len(seed) < MinSeedSize {
		return nil, "", errShortSeed
	}
	const e = 65537
	primes := make([]*big.Int, 2)
	for i := range primes {
		b, err := derive(seed, "rsa prime "+strconv.Itoa(i), realm, rsaKeyBits/16)
		if err != nil {
			return nil, "", err
		}
		b[0] |= 0xc0
		b[len(b)-1] |= 1
		p := new(big.Int).SetBytes(b)
		two, pm1, gcd, bigE := big.NewInt(2), new(big.Int), new(big.Int), big.NewInt(e)
		for {
			if p.ProbablyPrime(20) && gcd.GCD(nil, nil, pm1.Sub(p, big.NewInt(1)), bigE).Cmp(big.NewInt(1)) == 0 {
				break
			}
			p.Add(p, two)
		}
		primes[i] = p
	}
	p, q := primes[0], primes[1]
	if p.Cmp(q) == 0 {
		return nil, "", errors.New("issuer: the seed derives equal primes")
	}
	one := big.NewInt(1)
	phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
	d := new(big.Int).ModInverse(big.NewInt(e), phi)
	if d == nil {
		return nil, "", errors.New("issuer: the seed derives no RSA key")
	}
	k := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: new(big.Int).Mul(p, q), E: e}, D: d, Primes: []*big.Int{p, q}}
	k.Precompute()
	if err := k.Validate(); err != nil {
		return nil, "", fmt.Errorf("issuer: seeded RSA key: %w", err)
	}
	kid, err := thumbprint(k.Public())
	return k, kid, err
}
