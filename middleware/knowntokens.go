package middleware

import (
	"hash/maphash"
	"sync/atomic"
)

// Every protected request's token is checked against RFC 6750's grammar
// (b64token), byte by byte: for a JWT of a kilobyte, three times what the
// rest of a cached request costs the middleware. The answer depends on the
// token's bytes alone, so the guards remember the tokens of the requests
// they granted, and read a request whose token is one of them by its
// digest, which costs a fraction of the check.
//
// knownTokens holds them: a table of knownSlots digests, a token's slot
// chosen by its digest, the newest granted token of a slot replacing the
// one before. A digest is maphash's of the token under a seed made at
// random for the process: the table holds no byte of any token (a revoked
// bearer token must not stay in memory, core dumps or heap profiles for as
// long as the process runs), and nobody outside the process can make a
// token whose digest is another's. A token whose digest a slot holds is
// taken as one that passed the check; were two digests ever equal by
// chance (one pair in 2^64), the token would skip only the grammar check,
// which decides no answer: pep sends the token, and nothing but the
// gateway's GRANT lets it through. Only tokens a granted request carried
// are kept (not what an unauthenticated request sends), of minKnownToken
// bytes or more (a shorter one is checked as fast as it is hashed). It is
// safe for concurrent use: each slot is one atomic word.
var knownTokens [knownSlots]atomic.Uint64

// knownSeed is the digests' seed, one per process.
var knownSeed = maphash.MakeSeed()

const (
	knownSlots    = 128
	knownBits     = 7 // log2(knownSlots)
	minKnownToken = 16
)

// knownDigest returns tok's digest, never zero (an empty slot's value),
// and its slot. maphash.Comparable hashes a string in one call of the
// runtime's hash, keyed by the seed as maphash.String is; String hashes a
// long one 128 bytes a call, which for a JWT of a kilobyte costs a
// third more than the hash itself.
func knownDigest(tok string) (uint64, *atomic.Uint64) {
	h := maphash.Comparable(knownSeed, tok) | 1
	return h, &knownTokens[h>>(64-knownBits)]
}

// known reports whether tok is a token a granted request carried, which
// passed b64token then.
func known(tok string) bool {
	if len(tok) < minKnownToken {
		return false
	}
	h, slot := knownDigest(tok)
	return slot.Load() == h
}

// remember keeps the digest of tok, the token of a request that was
// granted, which BearerFromValues took.
func remember(tok string) {
	if len(tok) < minKnownToken {
		return
	}
	h, slot := knownDigest(tok)
	if slot.Load() != h { // write the shared line only when it changes
		slot.Store(h)
	}
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
