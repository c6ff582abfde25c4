// Package respell makes, for tests, the other spellings of a compact JWS
// that a verifier reads as the same token, and a forged one: what the
// decision clients' retirement of a token by its identity is tested with
// (internal/core, identity.go).
package respell

import (
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// alphabet is the base64url alphabet (RFC 4648, section 5).
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// Segment names the segments of a compact JWS.
type Segment int

// The segments of a compact JWS.
const (
	Header Segment = iota
	Payload
	Signature
)

// String returns the segment's name.
func (s Segment) String() string {
	return [...]string{"header", "payload", "signature"}[s]
}

// UnusedBits returns token, a compact JWS, with the lowest unused bit of
// the last character of segment seg set the other way: the same bytes to
// a decoder that ignores those bits (Go's base64.RawURLEncoding, and so
// go-jose), and a different string. It fails when that segment's length
// is a multiple of 4 (its last character has no unused bit) or token is no
// compact JWS.
func UnusedBits(token string, seg Segment) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("respell: not a compact JWS")
	}
	p := parts[seg]
	if len(p)%4 == 0 || len(p)%4 == 1 {
		return "", fmt.Errorf("respell: the %s segment (%d characters) has no unused bits", seg, len(p))
	}
	v := strings.IndexByte(alphabet, p[len(p)-1])
	if v < 0 {
		return "", fmt.Errorf("respell: the %s segment is not base64url", seg)
	}
	parts[seg] = p[:len(p)-1] + string(alphabet[v^1]) // bit 0 is unused in both cases
	return strings.Join(parts, "."), nil
}

// ECDSATwin returns token, a compact JWS signed ES256, with its signature
// (r, s) replaced by (r, n-s), which verifies as well (crypto/ecdsa does
// not require a low s): the twin anyone holding the token can make.
func ECDSATwin(token string) (string, error) {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return "", errors.New("respell: not a compact JWS")
	}
	sig, err := base64.RawURLEncoding.DecodeString(token[i+1:])
	if err != nil {
		return "", fmt.Errorf("respell: the signature: %w", err)
	}
	if len(sig) != 64 {
		return "", fmt.Errorf("respell: a signature of %d bytes is not ES256's", len(sig))
	}
	s := new(big.Int).SetBytes(sig[32:])
	s.Sub(elliptic.P256().Params().N, s)
	twin := append(sig[:32:32], s.FillBytes(make([]byte, 32))...)
	return token[:i+1] + base64.RawURLEncoding.EncodeToString(twin), nil
}

// Forged returns token, a compact JWS, with a signature of the same length
// that no key made (every byte 0x5a): the token's header and payload under
// a signature that does not verify.
func Forged(token string) (string, error) {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return "", errors.New("respell: not a compact JWS")
	}
	n := base64.RawURLEncoding.DecodedLen(len(token) - i - 1)
	return token[:i+1] + base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("\x5a", n))), nil
}
