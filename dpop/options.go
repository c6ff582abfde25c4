package dpop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Defaults of a Verifier built without options.
const (
	// DefaultMaxAge is how far in the past a proof's iat may be.
	DefaultMaxAge = 60 * time.Second
	// DefaultMaxSkew is how far in the future a proof's iat may be, to allow
	// for clients whose clocks run ahead.
	DefaultMaxSkew = 10 * time.Second
	// DefaultReplayCacheSize is how many unexpired proofs a Verifier
	// remembers, besides up to a tenth as many dated more than a second
	// ahead, which it holds apart (see [WithReplayCacheSize]). With the
	// default window of 70 s it holds every proof of about 1,400 accepted
	// per second; past that its window shortens. A full cache takes about
	// 13 MB (some 112 bytes per entry, and 1.1 MB of marks for keys
	// it forgot a proof dated ahead of, which grow to at most 8.7 MB
	// under a flood of such proofs of fresh keys).
	DefaultReplayCacheSize = 100_000
	// DefaultReplayKeyLimit is how many unexpired proofs of one key a
	// Verifier remembers (about 140 accepted per second over the default
	// window), not counting those dated more than a second ahead.
	DefaultReplayKeyLimit = 10_000
)

// The ranges of the numeric options beyond their sign, so that each keeps
// its feature meaningful and the memory it may take bounded.
const (
	// MinMaxAge is the least maxAge of [WithIATWindow]: iat counts whole
	// seconds, so a shorter one would refuse proofs made this very second.
	MinMaxAge = time.Second
	// MaxIATWindow bounds maxAge and maxSkew of [WithIATWindow]: RFC 9449
	// (section 11.1) asks for a window of seconds or minutes, and a proof
	// stays valid, and its record kept, for the whole window.
	MaxIATWindow = time.Hour
	// MaxReplayCacheSize bounds [WithReplayCacheSize]: a hundred times the
	// default, about 1.1 GB when full, besides its marks (8.3 to 17 bytes
	// per proof of the size, allocated as soon as one key forgets a proof
	// dated ahead; see [WithReplayCacheSize]).
	MaxReplayCacheSize = 10_000_000
)

// Nonces is the server's source of DPoP nonces (RFC 9449 sections 8 and 9),
// given to a Verifier with [WithNonces]. Implementations must be safe for
// concurrent use. How nonces are made (random values in a shared store,
// MACed timestamps, ...) and when they rotate is up to the server.
type Nonces interface {
	// Valid reports whether a proof carrying nonce is acceptable now. nonce
	// is the proof's nonce claim, "" when the proof has none: return true for
	// "" only when nonces are not required at the moment (a server can turn
	// its nonce requirement on and off this way). Valid is called only for a
	// proof whose signature, claims and token binding have been verified.
	Valid(ctx context.Context, nonce string) bool
	// Next returns a fresh nonce for the DPoP-Nonce response header. The
	// Verifier calls it when Valid returned false and puts the result in the
	// [*NonceError] it returns. Servers may also call it themselves to send a
	// new nonce with a successful response.
	Next(ctx context.Context) (string, error)
}

// Option configures a [Verifier]; pass options to [NewVerifier], which
// validates them once.
type Option func(*config)

type config struct {
	algs      []jose.SignatureAlgorithm
	maxAge    time.Duration
	maxSkew   time.Duration
	now       func() time.Time
	cacheSize int
	keyLimit  int
	nonces    Nonces
	store     ReplayStore
	maxRSA    int
	clockSet  bool // WithClock was given
	errs      []error
}

func defaultConfig() config {
	return config{
		algs:      defaultAlgorithms,
		maxAge:    DefaultMaxAge,
		maxSkew:   DefaultMaxSkew,
		now:       time.Now,
		cacheSize: DefaultReplayCacheSize,
		keyLimit:  DefaultReplayKeyLimit,
		maxRSA:    DefaultMaxRSABits,
	}
}

// WithMaxRSABits sets the largest RSA modulus, in bits, a proof's key may
// have; the default is DefaultMaxRSABits (4,096), the largest key a Signer
// signs with. Raise it, up to 8,192, only when your clients sign with
// larger keys (other libraries' signers): the key of a proof nobody
// authenticated yet decides what its verification costs, about eight
// times more at 8,192 bits than at 4,096. NewVerifier fails for a value outside 2,048 to 8,192. The
// exponent must be 65537 whatever the bound.
func WithMaxRSABits(bits int) Option {
	return func(c *config) {
		if bits < minRSABits || bits > maxRSABits {
			c.errs = append(c.errs, fmt.Errorf("dpop: WithMaxRSABits(%d): give %d to %d", bits, minRSABits, maxRSABits))
			return
		}
		c.maxRSA = bits
	}
}

// WithAlgorithms sets the JWS algorithms a proof may use; the default is
// ES256, ES384, PS256, RS256, EdDSA and Ed25519 (EdDSA with an Ed25519 key
// under its RFC 9864 name, which oauth4webapi and openid-client send).
// Allowed values are ES256, ES384, ES512, PS256, PS384, PS512, RS256, RS384,
// RS512, EdDSA and Ed25519; "none", HMAC algorithms and unknown names make
// NewVerifier fail, as does an empty list.
// The order is kept in [Verifier.Algorithms] and in the challenge's algs.
func WithAlgorithms(algs ...string) Option {
	return func(c *config) {
		if len(algs) == 0 {
			c.errs = append(c.errs, errors.New("dpop: WithAlgorithms: empty list"))
			return
		}
		var out []jose.SignatureAlgorithm
		for _, a := range algs {
			alg := jose.SignatureAlgorithm(a)
			if !isSupported(alg) {
				c.errs = append(c.errs, fmt.Errorf("dpop: WithAlgorithms: %q is not an allowed DPoP algorithm", a))
				continue
			}
			dup := false
			for _, o := range out {
				dup = dup || o == alg
			}
			if !dup {
				out = append(out, alg)
			}
		}
		c.algs = out
	}
}

// WithIATWindow sets how far a proof's iat may lie in the past (maxAge, default
// [DefaultMaxAge]) and in the future (maxSkew, default [DefaultMaxSkew]).
// maxAge must be from [MinMaxAge] (1 s) to [MaxIATWindow] (1 h), and
// maxSkew from 0 to [MaxIATWindow]; NewVerifier fails otherwise. Accepted
// proofs stay in the replay cache for maxAge after their iat, so a wider
// window needs a larger [WithReplayCacheSize].
func WithIATWindow(maxAge, maxSkew time.Duration) Option {
	return func(c *config) {
		if maxAge < MinMaxAge || maxAge > MaxIATWindow || maxSkew < 0 || maxSkew > MaxIATWindow {
			c.errs = append(c.errs, fmt.Errorf("dpop: WithIATWindow(%v, %v): maxAge must be from %v to %v and maxSkew from 0 to %v",
				maxAge, maxSkew, MinMaxAge, MaxIATWindow, MaxIATWindow))
			return
		}
		c.maxAge, c.maxSkew = maxAge, maxSkew
	}
}

// WithClock sets the clock the Verifier reads the current time from; the
// default is time.Now. A nil clock makes NewVerifier fail. The clock may
// step back or be wrong ahead for a while: no replay is accepted either
// way, and a reading wrong ahead costs the proofs it found too old, not
// every proof until the real time passes it. With a clock of its own the
// Verifier does not ask a nonce of proofs dated before it was made (see
// [Verifier]): a restart has no meaning on a clock the caller moves.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.errs = append(c.errs, errors.New("dpop: WithClock: nil clock"))
			return
		}
		c.now, c.clockSet = now, true
	}
}

// WithReplayCacheSize sets how many unexpired proofs the Verifier remembers to
// detect replays (default [DefaultReplayCacheSize]); n must be from 1 to
// [MaxReplayCacheSize] (10,000,000), or NewVerifier fails. Size
// it for the rate of accepted proofs times the window (maxAge plus maxSkew of
// [WithIATWindow]). A full cache makes room for a new proof by forgetting its
// oldest one, and refuses, with [ErrReplayCacheFull], a proof no newer than
// the one it would forget; so it never accepts the replay of a proof it
// forgot (it holds n proofs at least as new until that one expires). A full
// cache thus shortens the window in which it accepts proofs to what it can
// hold, rather than refuse every proof.
//
// So that no caller can make its proofs look newer than the others' by
// dating them ahead, a proof dated more than a second ahead of the
// Verifier's clock is held apart until it is dated at most a second ahead,
// and only then joins the n proofs. At most n/10 proofs (at least one) are
// held apart; past that bound the cache forgets the earliest due proof of
// the key holding the latest due one (of keys holding as late a one, the
// one holding the most; the new proof itself, if that is the one: it is
// accepted) and records its expiry as that key's mark: the key's proofs
// no newer are refused with ErrReplayCacheFull from then on (its replay
// among them). Once the key holds no proof, its mark goes to
// a table that keeps it with the key: buckets of 16 keys' marks, room for
// n/2 marks at first (at least 1,024, rounded up to a power of two of
// buckets), a hash keyed with a secret of the Verifier picking a key's
// bucket, so no caller can aim at another's. When a key's bucket holds 16
// marks still in force, the table doubles, up to eight times its first
// size (room for 4n marks); only then does a further key's mark make the
// bucket's keys share the lowest one, refusing their proofs no newer.
// Keys cost a caller nothing, so no key's proofs are kept out by how many
// proofs other keys hold apart, and another key's mark refuses a fresh
// proof only under a flood, each proof of a fresh key dated 10 s ahead,
// of some n/5 proofs a second (measured: at the default n, none of the
// fresh proofs at 20,000 a second, 0.2 % at 24,000, 2 % at 32,000, a
// third at 48,000; at n = 200,000, none at 32,000, 0.3 % at 48,000, 2.5 %
// at 64,000), fourteen times the rate the cache is sized for (n/70 a
// second). The cache thus holds up to n + n/10 proofs, and, once a key
// with a mark held nothing, 8.3 to 17 bytes of marks per proof of n (1.1
// MB at the default n), eight times that under such a flood (8.7 MB),
// until its marks all expired.
//
// The rule, then: a proof dated at most a second ahead (a fresh one) is
// refused with ErrReplayCacheFull only when the cache holds n proofs, or
// its key its limit, dated no earlier than it, each of which joined the n
// no earlier than a second before that date: each was recorded then, or
// was held apart until then; or when it is no newer than a proof the
// cache forgot that its key's mark records (or, under such a flood, a
// mark its key shares). A proof dated further ahead is refused with
// ErrReplayCacheFull only in that last case.
func WithReplayCacheSize(n int) Option {
	return func(c *config) {
		if n <= 0 || n > MaxReplayCacheSize {
			c.errs = append(c.errs, fmt.Errorf("dpop: WithReplayCacheSize(%d): size must be from 1 to %d", n, MaxReplayCacheSize))
			return
		}
		c.cacheSize = n
	}
}

// WithReplayKeyLimit sets how many unexpired proofs of one key (one
// thumbprint) the replay cache remembers (default [DefaultReplayKeyLimit], and
// never more than the cache's size); n must be positive. A key at its limit
// has its own oldest proof forgotten to make room, and its own proofs no
// newer than that one refused with [ErrReplayCacheFull]: one caller that
// sends proofs faster than its share of the cache shortens its own window,
// and cannot fill the cache for the others. The proofs dated more than a
// second ahead, which the cache holds apart, do not count against the
// limit: [WithReplayCacheSize] says which key pays when their room is
// full. Proofs are recorded only
// once the caller is authenticated (see [Verifier.Check]), but a caller
// may hold any number of keys. With a [ReplayStore] ([WithReplayStore]) it
// bounds the records one key holds in the store when the store is a
// [ChargedReplayStore], by the same rule: the key's oldest record is
// dropped to make room, and its proofs no newer than that one are refused
// with ErrReplayCacheFull, that key's alone; with any other store it has
// no effect.
func WithReplayKeyLimit(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, errors.New("dpop: WithReplayKeyLimit: limit must be positive"))
			return
		}
		c.keyLimit = n
	}
}

// WithNonces makes the Verifier check every proof's nonce with n (RFC 9449
// sections 8 and 9); without it, nonces are not required and a proof's nonce
// claim is ignored. A nil n makes NewVerifier fail.
func WithNonces(n Nonces) Option {
	return func(c *config) {
		if n == nil {
			c.errs = append(c.errs, errors.New("dpop: WithNonces: nil Nonces"))
			return
		}
		c.nonces = n
	}
}
