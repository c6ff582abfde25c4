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
// moves its time forward to the wall clock's, and how near a line of time
// the source left the wall clock must read for the source to return to it.
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
// again. Each such move leaves a line (the time the source kept) for a new
// one (the wall clock's, advanced by the monotonic clock from then on), and
// the source remembers the line it started on and the last three others
// it left. It returns to the lowest of them that the wall clock is not
// ahead of by more than NonceClockTolerance nor behind by more than a step
// (lifetime/2), forgetting the lines above it: a replica whose wall clock
// was wrong ahead for a while (a bad time server's answer) agrees with the
// other replicas again as soon as its clock is put right, as long as the
// line of real time is one it remembers (not so after four or more moves
// when it did not start on real time: a clock slow at start and stepped
// forward, a suspension; nor when it started fast by more than a step:
// such a replica is put right by a restart). The monotonic clock counted
// real time on the line it returns to, so the return makes no old nonce
// valid again;
// the nonces it minted on the line it abandons are of steps not yet begun
// there, refused until the line reaches them (as those of any replica
// whose clock runs ahead). Time moves back nowhere else: a wall clock
// stepped back more than a step below every line held, or between two of
// them farther, moves nothing, and a suspended machine's catch-up stays,
// unless its wall clock is stepped back by as much again, within
// NonceClockTolerance below and a step above (then nonces as old as the
// suspension are valid again).
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
	n := &hmacNonces{keys: keys, step: int64(lifetime / 2), wall: wall, elapsed: elapsed, start: wall().UnixNano()}
	n.lines.Store(&nonceLines{n: 1, mono: n.start}) // the start line: offset 0
	return n, nil
}

// hmacNonces are the Nonces of NewHMACNonces.
type hmacNonces struct {
	keys    [][]byte // keys[0] mints
	step    int64    // ns
	wall    func() time.Time
	elapsed func() time.Duration // monotonic time since start was read
	start   int64                // the wall clock's first reading, unix ns
	lines   atomic.Pointer[nonceLines]
}

var _ Nonces = (*hmacNonces)(nil)

// nonceLinesKept is how many lines a source remembers having left, to
// return to one when the wall clock comes back to it: the start line,
// which it never forgets, and the latest others.
const nonceLinesKept = 4

// nonceLines are the lines of a source's time, each an offset (ns) from
// start + elapsed: off[n-1] is the current line, off[:n-1] the lines left
// for it, most recent last. Offsets increase by more than
// NonceClockTolerance from one line to the next. A nonceLines is never
// changed once stored: a move stores a new one.
type nonceLines struct {
	off  [nonceLinesKept + 1]int64
	n    int
	mono int64 // start + elapsed read by the call that stored them
}

// now returns the source's time in unix ns: start advanced by the
// monotonic clock, on the current line (see nonceLines and
// NewHMACNonces). It allocates only when the time moves to another line.
func (n *hmacNonces) now() int64 {
	mono := n.start + int64(n.elapsed())
	wall := n.wall().UnixNano()
	for {
		cur := n.lines.Load()
		next, t := cur.follow(mono, wall, n.step)
		if next == nil || n.lines.CompareAndSwap(cur, next) {
			return t
		}
	}
}

// follow returns the time the wall clock reading wall puts the source on,
// when start + elapsed is mono, and the lines to store for it (nil when
// they are l). A line left is returned to when it is neither behind the
// wall clock by more than NonceClockTolerance nor ahead of it by more than
// ahead (a step): a line ahead of real time makes no old nonce valid
// again, and one a few seconds ahead (a process started with its wall
// clock fast, put right since) is nearer the other replicas than the line
// left for it. Readings taken before l was stored move nothing: a call
// that read the clocks before a move and was slow to get here does not
// undo it.
func (l *nonceLines) follow(mono, wall, ahead int64) (*nonceLines, int64) {
	const tol = int64(NonceClockTolerance)
	at := mono + l.off[l.n-1]
	switch {
	case mono < l.mono:
	case wall-at > tol: // ahead: a new line at the wall clock, leaving this one
		next := &nonceLines{mono: mono}
		if l.n > nonceLinesKept { // forget the oldest but the start line
			next.off[0] = l.off[0]
			next.n = 1 + copy(next.off[1:], l.off[l.n-(nonceLinesKept-1):l.n])
		} else {
			next.n = copy(next.off[:], l.off[:l.n])
		}
		next.off[next.n] = wall - mono
		next.n++
		return next, wall
	case at-wall > tol: // behind: back to the lowest line left that is not behind the wall clock, if any is near
		for i := range l.n - 1 {
			if d := mono + l.off[i] - wall; d >= -tol && d <= ahead {
				next := &nonceLines{n: i + 1, mono: mono}
				copy(next.off[:], l.off[:i+1])
				return next, mono + l.off[i]
			}
		}
	}
	return nil, at
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
