package transport

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/orgauthz/orgauthz/dpop"
)

// A DPoP proof is made on the call's goroutine when its key is held in
// memory (dpop.Signer.InMemory: the standard library's ECDSA, Ed25519 and
// RSA private keys): a signature then takes tens of microseconds and
// cannot block. Any other key (a KMS, an HSM, a platform key store) may
// wait on a network or a device, and crypto.Signer.Sign takes no context:
// its proof is made on a goroutine of its own, which the call waits for
// only until its context ends (rule 10). A call that gives up fails closed
// with a signingError, not as a gateway failure: nothing was sent, and the
// breaker does not count it. A key that panics there fails its call with
// errKeyPanicked rather than end the process.
//
// A signature a call gave up on is abandoned: its goroutine runs until
// the key returns. A key here is a *dpop.Signer, counted across every
// client and credential that uses it. So that a key that hangs cannot pile up goroutines
// without end, a key with maxAbandoned abandoned signatures outstanding is
// taken as hung: no signature is asked of it until one of them returns,
// and calls fail at once. The goroutines a hung key holds are then the
// signatures begun before it was taken as hung: a bound set by the calls
// under way within one deadline, which does not grow while the key hangs.
// A few abandoned signatures are tolerated, not one, so that callers who
// hang up while a slow but working key signs do not fail the others.

// maxAbandoned is how many abandoned signatures a key may have outstanding
// before it is taken as hung.
const maxAbandoned = 4

// abandoned holds, per key, the signatures outstanding that their calls
// gave up on. A key is in the map only while it has some.
var abandoned = struct {
	sync.Mutex
	keys map[*dpop.Signer]*outstanding
}{keys: make(map[*dpop.Signer]*outstanding)}

// outstanding counts one key's abandoned signatures.
type outstanding struct {
	n int
	// returned is closed when the last of them returns and the key
	// leaves the map.
	returned chan struct{}
}

// stuck returns how many abandoned signatures s has outstanding.
func stuck(s *dpop.Signer) int {
	abandoned.Lock()
	defer abandoned.Unlock()
	if o := abandoned.keys[s]; o != nil {
		return o.n
	}
	return 0
}

// signature is one proof made on a goroutine of its own.
type signature struct {
	done  chan struct{} // closed once proof and err are set
	proof string
	err   error
	// finished and given are read and written under abandoned's lock:
	// finished once the key has returned, given once the call gave up
	// (then the signature is counted in abandoned.n until it finishes).
	finished, given bool
}

// prove returns s's proof for one request, made under ctx: on the call's
// goroutine for a key held in memory, else on a goroutine of its own that
// the call waits for only until ctx ends, and not at all while the key is
// taken as hung. The error of a proof not had in time is a signingError
// matching ErrUnavailable.
func prove(ctx context.Context, s *dpop.Signer, method, url, token, nonce string) (string, error) {
	if s == nil || s.InMemory() { // a nil Signer's Proof says what is wrong at once
		return s.Proof(method, url, token, nonce)
	}
	if n := stuck(s); n >= maxAbandoned {
		return "", &signingError{msg: "the DPoP key has not returned " + strconv.Itoa(n) +
			" signatures that calls gave up on; it is asked for no other until one returns"}
	}
	sig := &signature{done: make(chan struct{})}
	go func() {
		var proof string
		err := errKeyPanicked
		defer func() {
			// A key that panics fails its call closed: on a goroutine of
			// the client's own, its panic would end the process.
			_ = recover()
			sig.finish(s, proof, err)
		}()
		proof, err = s.Proof(method, url, token, nonce)
	}()
	select {
	case <-sig.done:
		return sig.proof, sig.err
	case <-ctx.Done():
	}
	abandoned.Lock()
	if !sig.finished {
		sig.given = true
		o := abandoned.keys[s]
		if o == nil {
			o = &outstanding{returned: make(chan struct{})}
			abandoned.keys[s] = o
		}
		o.n++
	}
	abandoned.Unlock()
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return "", &signingError{msg: "the DPoP key did not sign the proof before the call's deadline", ctx: err}
	}
	return "", &signingError{msg: "the call was cancelled while the DPoP key signed the proof", ctx: err}
}

// errKeyPanicked is the error of a signature whose key panicked.
var errKeyPanicked = errors.New("dpop: the key panicked while signing")

// finish records the signature's outcome, counts an abandoned one as
// returned, and wakes the call if it still waits.
func (sig *signature) finish(s *dpop.Signer, proof string, err error) {
	abandoned.Lock()
	sig.proof, sig.err, sig.finished = proof, err, true
	if o := abandoned.keys[s]; sig.given {
		if o.n--; o.n == 0 {
			delete(abandoned.keys, s)
			close(o.returned)
		}
	}
	abandoned.Unlock()
	close(sig.done)
}

// signingError is why a DPoP proof could not be had from a key that may
// block: it did not sign before the call's context ended, or it is taken
// as hung. It matches ErrUnavailable (no decision could be had, through no
// fault of the caller's) and, when the call ran out of time or was
// cancelled, the context's error. The Exchanger wraps it in a
// *CredentialError: nothing was sent, and the breaker does not count it.
type signingError struct {
	msg string
	ctx error // context.DeadlineExceeded or context.Canceled, else nil
}

func (e *signingError) Error() string { return e.msg }

// Unwrap returns ErrUnavailable and, when the call's context ended, its
// error.
func (e *signingError) Unwrap() []error {
	if e.ctx != nil {
		return []error{ErrUnavailable, e.ctx}
	}
	return []error{ErrUnavailable}
}
