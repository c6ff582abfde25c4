package core

import (
	"crypto/sha256"
	"strings"
)

// A token has other spellings that a server reads as the same token, so
// that every retirement of a token (Purge, a 401, the purge of a replaced
// token by SetToken or ClearToken, another replica's purge, the retirement
// of the flights under way) acts on what the token is, its identity, not
// on how one caller spelt it:
//
//   - the last character of a base64url segment whose length is not a
//     multiple of 4 carries bits that decoding ignores (Go's
//     base64.RawURLEncoding, and so go-jose, which re-encodes the decoded
//     header and payload for the signing input): 4 of them when the
//     segment's length is 2 more than a multiple of 4, 2 when it is 3 more
//     (the decoder skips line breaks too, but no header, and so no token
//     sent, holds one);
//   - an ECDSA signature (r, s) has a twin (r, n-s) that verifies as well,
//     which anyone holding the token can make.
//
// So a compact JWS (three dot-separated segments of the base64url
// alphabet) is identified by its signing input, the header and the
// payload, each with the unused bits of its last character zeroed; the
// signature is left out, being what is malleable. A compact JWE (five
// segments) is identified by all five segments, likewise zeroed. Any
// other token is its own identity.
//
// Leaving the signature out is safe because an identity is only ever used
// to retire, never to serve: a decision is served only to the exact token
// string the server answered for (the cache compares tokens whole). A
// forged token with a real token's header and payload and a bad signature
// has the real token's identity: its refusal (a 401) retires the real
// token's cached decisions too, which are then asked of the server again
// (fail closed), and it is never granted anything.

// identityDomain separates the identities' digests from the tokens' own
// (tokenDigest) and from any other SHA-256 of them.
const identityDomain = "orgauthz/invalidation/identity/v1\x00"

// identityDigest is the digest of token's identity: what a retirement
// finds every cached spelling of the token by, here (the digest index)
// and on the invalidation channel. It allocates nothing for a token of up
// to shortToken bytes, hashed from the stack: a per-call token's is made
// for each request it sends (Core.digestsOf).
func identityDigest(token string) [digestBytes]byte {
	var buf [len(identityDomain) + shortToken]byte
	return sha256.Sum256(appendIdentity(append(buf[:0], identityDomain...), token))
}

// appendIdentity appends token's identity to b (see above).
func appendIdentity(b []byte, token string) []byte {
	segments, ok := joseSegments(token)
	if !ok {
		return append(b, token...)
	}
	if segments == 3 { // a JWS: its signing input, without the signature
		token = token[:strings.LastIndexByte(token, '.')]
	}
	for len(token) > 0 {
		seg, rest, more := strings.Cut(token, ".")
		b = appendSegment(b, seg)
		if more {
			b = append(b, '.')
		}
		token = rest
	}
	return b
}

// appendSegment appends seg, a segment of the base64url alphabet that is a
// valid unpadded encoding, with the unused bits of its last character
// zeroed.
func appendSegment(b []byte, seg string) []byte {
	var keep byte // the bits of the last character that carry data
	switch len(seg) % 4 {
	case 0:
		return append(b, seg...)
	case 2:
		keep = 0x30
	case 3:
		keep = 0x3c
	}
	last := len(seg) - 1
	b = append(b, seg[:last]...)
	return append(b, base64URL[byte(base64URLValue[seg[last]])&keep])
}

// joseSegments reports whether token reads as a compact JWS (3 segments)
// or JWE (5), and how many segments it has: every segment is a valid
// unpadded base64url encoding (of the base64url alphabet, and of a length
// that is not 1 more than a multiple of 4). Anything else is no token of
// those forms, which a server decodes in no other spelling of it.
func joseSegments(token string) (int, bool) {
	segments, n := 1, 0 // n: the length of the current segment
	for i := range len(token) {
		switch c := token[i]; {
		case c == '.':
			if n%4 == 1 {
				return 0, false
			}
			segments, n = segments+1, 0
		case base64URLValue[c] < 0:
			return 0, false
		default:
			n++
		}
	}
	if n%4 == 1 || segments != 3 && segments != 5 {
		return 0, false
	}
	return segments, true
}

// base64URL is the base64url alphabet (RFC 4648, section 5);
// base64URLValue maps each byte to its value in it, -1 for the bytes not
// in it.
const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

var base64URLValue = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := range len(base64URL) {
		v[base64URL[i]] = int8(i)
	}
	return v
}()
