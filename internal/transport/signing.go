package transport

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/internal/signerid"
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
// A key here is one signer: the crypto.Signer a *dpop.Signer wraps, when
// it is comparable (every Signer dpop.NewSigner made of one key value and
// the copies Signer.WithClock makes share its bound), else the Signer
// NewSigner made and its WithClock copies (internal/signerid). Keyed by
// *dpop.Signer, each copy had slots of its own, so that a hung key held
// maxSigning more goroutines per copy. It is never keyed by the public
// key's thumbprint: key.Public proves nothing, so a crypto.Signer claiming
// another's public key (or a second backend of one key material, a KMS
// key's failover region) that hangs took that key's slots and locked its
// working Signers out. A key makes at most maxSigning signatures at
// once: a call takes one of the key's slots for its signature, waiting for one, when
// every slot is taken, only until its context ends; the slot comes back
// when the key returns, whether the call still waited for it or gave up.
// So a key that hangs holds at most maxSigning goroutines, however many
// calls ask it, and a call that hangs up costs no other call anything: a
// working key, however slow, gives its slot back when it answers. (It used
// to be taken as hung after four calls gave up on it, so that any four
// callers hanging up locked a slow but working key out for everyone.) A
// key whose every slot has been taken for longer than hungAfter is taken
// as hung: calls fail at once rather than wait their whole deadline for a
// slot, until one of its signatures returns.

const (
	// maxSigning bounds the signatures one key makes at once.
	maxSigning = 16
	// hungAfter is how long every slot of a key must have been taken for
	// the key to be taken as hung. No caller can make a working key's
	// signatures take longer than the key takes.
	hungAfter = 10 * time.Second
)

// keys holds the keys that sign, or are waited for, now, by keyID. A key
// is in the map only while some call holds or waits for one of its slots:
// its entry goes once no client uses it, and the map holds no more entries
// than there are keys signing, however many Signers wrap them.
var keys = struct {
	sync.Mutex
	m map[any]*keySigning
}{m: make(map[any]*keySigning)}

// keyID is the identity the bound is kept under: the signer s wraps
// (signerid.Of), the same for every Signer of one signer and never shared
// with another signer, whatever public key it claims. It is comparable and
// equal to itself. s is a Signer NewSigner built (prove handles any other
// first).
func keyID(s *dpop.Signer) any { return signerid.Of(s) }

// keySigning is one key's signatures under way.
type keySigning struct {
	slots chan struct{} // a value per signature under way
	// users counts the calls holding or waiting for a slot, and began
	// holds when each signature under way began; both under keys' lock.
	users int
	began map[*signature]time.Time
	// idle is closed when the key leaves the map: no call holds or waits
	// for a slot.
	idle chan struct{}
}

// enterKey returns the signatures under way of s's key, counting the call
// as a user.
func enterKey(s *dpop.Signer) *keySigning {
	keys.Lock()
	defer keys.Unlock()
	id := keyID(s)
	ks := keys.m[id]
	if ks == nil {
		ks = &keySigning{slots: make(chan struct{}, maxSigning), began: make(map[*signature]time.Time), idle: make(chan struct{})}
		keys.m[id] = ks
	}
	ks.users++
	return ks
}

// leave ends a user's hold or wait, and takes the key out of the map once
// it has none.
func (ks *keySigning) leave(s *dpop.Signer) {
	keys.Lock()
	defer keys.Unlock()
	if ks.users--; ks.users == 0 {
		delete(keys.m, keyID(s))
		close(ks.idle)
	}
}

// hung reports whether every slot has been taken, at now, for longer than
// hungAfter.
func (ks *keySigning) hung(now time.Time) bool {
	keys.Lock()
	defer keys.Unlock()
	if len(ks.began) < maxSigning {
		return false
	}
	for _, began := range ks.began {
		if now.Sub(began) <= hungAfter {
			return false
		}
	}
	return true
}

// signature is one proof made on a goroutine of its own.
type signature struct {
	done  chan struct{} // closed once proof and err are set
	proof string
	err   error
}

// prove returns s's proof for one request, made under ctx: on the call's
// goroutine for a key held in memory, else on a goroutine of its own, in
// one of the key's slots, that the call waits for (and for the slot) only
// until ctx ends, and not at all while the key is taken as hung. The error
// of a proof not had in time is a signingError matching ErrUnavailable.
func prove(ctx context.Context, s *dpop.Signer, method, url, token, nonce string) (string, error) {
	if s == nil || s.InMemory() || s.Thumbprint() == "" {
		// A nil Signer's Proof, or a zero one's (it has no key and no
		// thumbprint), says what is wrong at once.
		return s.Proof(method, url, token, nonce)
	}
	ks := enterKey(s)
	if ks.hung(time.Now()) {
		ks.leave(s)
		return "", &signingError{msg: "the DPoP key has not returned any of its last " + strconv.Itoa(maxSigning) +
			" signatures for over " + hungAfter.String() + "; it is asked for no other until one returns"}
	}
	select {
	case ks.slots <- struct{}{}:
	case <-ctx.Done():
		ks.leave(s)
		return "", gaveUp(ctx, "the DPoP key was signing as many proofs as it may at once")
	}
	sig := &signature{done: make(chan struct{})}
	keys.Lock()
	ks.began[sig] = time.Now()
	keys.Unlock()
	go func() {
		// errKeyPanicked also for a key that ends the goroutine
		// (runtime.Goexit); the slot and the key's use are released on
		// every way out.
		proof, err := "", error(errKeyPanicked)
		defer func() {
			keys.Lock()
			delete(ks.began, sig)
			keys.Unlock()
			<-ks.slots
			ks.leave(s)
			sig.proof, sig.err = proof, err
			close(sig.done)
		}()
		// A key that panics fails its call closed (safego): on a goroutine
		// of the client's own, its panic would end the process, and the
		// call may have stopped waiting for it.
		if safego.Call(func() { proof, err = s.Proof(method, url, token, nonce) }) != nil {
			proof, err = "", errKeyPanicked
		}
	}()
	select {
	case <-sig.done:
		return sig.proof, sig.err
	case <-ctx.Done():
		return "", gaveUp(ctx, "the DPoP key did not sign the proof")
	}
}

// gaveUp is the signingError of a call whose context ended while it waited
// for what: before its deadline when it was cancelled.
func gaveUp(ctx context.Context, what string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return &signingError{msg: what + " before the call's deadline", ctx: err}
	}
	return &signingError{msg: what + " when the call was cancelled", ctx: err}
}

// errKeyPanicked is the error of a signature whose key panicked.
var errKeyPanicked = errors.New("dpop: the key panicked while signing")

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
