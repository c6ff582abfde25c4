package dpop

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
)

// MinNonceSecretSize is the shortest secret [NewHMACNonces] accepts, in
// bytes.
const MinNonceSecretSize = 32

// NonceClockTolerance is how far the wall clock may run ahead of the
// time an HMAC nonce source keeps (see [NewHMACNonces]) before the source
// moves its time forward to the wall clock's.
const NonceClockTolerance = time.Second

// nonceMACSize is the bytes of HMAC-SHA256 a nonce carries.
const nonceMACSize = 16

// nonceLabel separates the MACs of nonces from anything else the secret
// might be used for.
const nonceLabel = "orgauthz dpop nonce v1"

// NewHMACNonces returns [Nonces] that need no shared state: a nonce is a
// time step and its HMAC-SHA256 under secret, so every replica holding the
// same secret and lifetime accepts the nonces of every other. Nonces are
// always required (Valid("") is false).
//
// Time is cut in steps of lifetime/2; Next returns the nonce of the current
// step, and Valid accepts the nonces of the current and the previous step.
// A nonce is thus valid for at least lifetime/2 after Next returned it and
// never for lifetime or longer by the clock of the replica checking it; a
// replica whose clock runs ahead of the minting replica's by d cuts that
// short by d, one that runs behind by d accepts it for up to d longer (keep
// replicas' clocks within a second or so of each other, as NTP does). A
// nonce of a step not yet begun is refused, never held for later. Clients
// get a fresh nonce with every use_dpop_nonce answer and should keep the
// last DPoP-Nonce a server sent (RFC 9449 section 8.2).
//
// The source's time is the wall clock read when it was made, advanced by
// the process's monotonic clock: a wall clock stepped back (by an operator
// or a faulty time server) does not make old nonces valid again. Where the
// monotonic clock stood still while the wall clock went on (a suspended
// virtual machine), the source moves its time forward to the wall clock's
// as soon as the wall clock is NonceClockTolerance ahead: so a process
// frozen for an hour accepts no nonce older than its lifetime once it runs
// again. Time never moves back: after the wall clock was wrong ahead, the
// source stays ahead by as much (its nonces stay valid for at most
// lifetime, and those of replicas that were not ahead are refused as old)
// until restarted.
//
// secret must hold at least [MinNonceSecretSize] random bytes, and
// lifetime be at least 2 s. older lists earlier secrets, each as long,
// whose nonces are still accepted but never minted: rotate a secret by
// giving every replica the new one with the old one in older, then, a
// lifetime after the last replica changed, dropping the old one. The
// result is safe for concurrent use. NewHMACNonces copies its arguments.
func NewHMACNonces(secret []byte, lifetime time.Duration, older ...[]byte) (Nonces, error) {
	start := time.Now()
	return newHMACNonces(secret, lifetime, older, time.Now, func() time.Duration { return time.Since(start) })
}

// newHMACNonces is NewHMACNonces with the wall clock and the monotonic
// time elapsed since the wall clock's first reading given.
func newHMACNonces(secret []byte, lifetime time.Duration, older [][]byte, wall func() time.Time, elapsed func() time.Duration) (*hmacNonces, error) {
	if lifetime < 2*time.Second {
		return nil, fmt.Errorf("dpop: NewHMACNonces: lifetime %v is too short: use at least 2s (nonces rotate every lifetime/2)", lifetime)
	}
	keys := make([][]byte, 0, 1+len(older))
	for i, k := range append([][]byte{secret}, older...) {
		if len(k) < MinNonceSecretSize {
			what := "secret"
			if i > 0 {
				what = fmt.Sprintf("older secret %d", i)
			}
			return nil, fmt.Errorf("dpop: NewHMACNonces: the %s is %d bytes: use at least %d random bytes (e.g. openssl rand -base64 32)", what, len(k), MinNonceSecretSize)
		}
		keys = append(keys, append([]byte(nil), k...))
	}
	return &hmacNonces{keys: keys, step: int64(lifetime / 2), wall: wall, elapsed: elapsed, start: wall().UnixNano()}, nil
}

// hmacNonces are the Nonces of NewHMACNonces.
type hmacNonces struct {
	keys    [][]byte // keys[0] mints
	step    int64    // ns
	wall    func() time.Time
	elapsed func() time.Duration // monotonic time since start was read
	start   int64                // the wall clock's first reading, unix ns
	ahead   atomic.Int64         // how far the wall clock has been found ahead of start + elapsed, ns
}

var _ Nonces = (*hmacNonces)(nil)

// now returns the source's time in unix ns: start advanced by the
// monotonic clock, and moved forward (never back) when the wall clock
// runs ahead of that by more than NonceClockTolerance.
func (n *hmacNonces) now() int64 {
	mono := n.start + int64(n.elapsed())
	wall := n.wall().UnixNano()
	for {
		ahead := n.ahead.Load()
		if wall-(mono+ahead) <= int64(NonceClockTolerance) {
			return mono + ahead
		}
		if n.ahead.CompareAndSwap(ahead, wall-mono) {
			return wall
		}
	}
}

// Valid reports whether nonce is one Next returned, under any of the
// secrets, in the current step or the previous one.
func (n *hmacNonces) Valid(_ context.Context, nonce string) bool {
	var raw [8 + nonceMACSize]byte
	if len(nonce) != base64.RawURLEncoding.EncodedLen(len(raw)) {
		return false
	}
	if _, err := b64.Decode(raw[:], []byte(nonce)); err != nil {
		return false
	}
	step := int64(binary.BigEndian.Uint64(raw[:8]))
	cur := n.now() / n.step
	if step != cur && step != cur-1 {
		return false
	}
	ok := false
	for _, k := range n.keys {
		mac := n.mac(k, step)
		ok = hmac.Equal(mac[:], raw[8:]) || ok
	}
	return ok
}

// Next returns the nonce of the current step, under the first secret.
func (n *hmacNonces) Next(context.Context) (string, error) {
	step := n.now() / n.step
	var raw [8 + nonceMACSize]byte
	binary.BigEndian.PutUint64(raw[:8], uint64(step))
	mac := n.mac(n.keys[0], step)
	copy(raw[8:], mac[:])
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// mac returns the MAC of step under key, bound to the step's length so
// that sources of different lifetimes do not accept each other's nonces.
func (n *hmacNonces) mac(key []byte, step int64) [nonceMACSize]byte {
	h := hmac.New(sha256.New, key)
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], uint64(n.step))
	binary.BigEndian.PutUint64(buf[8:], uint64(step))
	h.Write([]byte(nonceLabel))
	h.Write(buf[:])
	var sum [sha256.Size]byte
	var out [nonceMACSize]byte
	copy(out[:], h.Sum(sum[:0]))
	return out
}
