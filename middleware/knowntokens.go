package middleware

import (
	"strings"
	"sync/atomic"
)

// Every protected request's token is checked against RFC 6750's grammar
// (b64token), byte by byte: for a JWT of a kilobyte, three times what the
// rest of a cached request costs the middleware. The answer depends on the
// token's bytes alone, so the guards remember the tokens of the requests
// they granted, and read a request whose token is one of them by comparing
// it whole with the remembered one, which is a fraction of the check.
//
// knownTokens holds them: a table of knownSlots tokens, a token's slot
// chosen by its length and two of its words (for a JWT, in its claims and
// in its signature), the newest granted token of a slot replacing the one
// before. A token is taken as checked only when it equals, byte for byte,
// the one its slot holds, which passed the check when it was put there:
// what a slot is chosen by decides how often the check is skipped, never
// what is accepted. Only tokens a granted request carried are kept (not
// what an unauthenticated request sends), of minKnownToken to
// maxKnownToken bytes (a shorter one is checked as fast as it is compared),
// so the table holds at most knownSlots × maxKnownToken bytes. It is safe
// for concurrent use: each slot is one atomic pointer to a string of its
// own.
var knownTokens [knownSlots]atomic.Pointer[string]

const (
	knownSlots    = 128
	knownBits     = 7 // log2(knownSlots)
	minKnownToken = 16
	maxKnownToken = 8 << 10
)

// knownSlot returns the slot of tok, which is at least minKnownToken
// bytes long.
func knownSlot(tok string) *atomic.Pointer[string] {
	n := len(tok)
	h := (word(tok, n/2) ^ word(tok, n-8)<<1 ^ uint64(n)) * 0x9e3779b97f4a7c15
	return &knownTokens[h>>(64-knownBits)]
}

// word returns the eight bytes of s from i on, little-endian.
func word(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// known reports whether tok is a token a granted request carried, which
// passed b64token then.
func known(tok string) bool {
	if len(tok) < minKnownToken || len(tok) > maxKnownToken {
		return false
	}
	p := knownSlot(tok).Load()
	return p != nil && *p == tok
}

// remember keeps tok, the token of a request that was granted, which
// BearerFromValues took; a copy, so that the table never holds a request's
// bytes.
func remember(tok string) {
	if len(tok) < minKnownToken || len(tok) > maxKnownToken {
		return
	}
	slot := knownSlot(tok)
	if p := slot.Load(); p != nil && *p == tok {
		return
	}
	own := strings.Clone(tok)
	slot.Store(&own)
}

// callerToken returns the caller's token as BearerFromValues reads the
// values of the request's Authorization header, answering a token the
// guards granted before without checking its grammar again; checked
// reports that the grammar was checked (the token is not one of those).
func callerToken(values []string) (token string, checked bool, err error) {
	if len(values) == 1 {
		if tok, ok := cutBearer(values[0]); ok && known(tok) {
			return tok, false, nil
		}
	}
	token, err = BearerFromValues(values)
	return token, true, err
}
