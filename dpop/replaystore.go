package dpop

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/orgauthz/orgauthz/internal/safego"
)

// ReplayStore records accepted proofs where every replica of a service sees
// them, so that a proof accepted by one replica is a replay at all the
// others (RFC 9449 section 11.1). Give one to a Verifier with
// [WithReplayStore]; github.com/orgauthz/orgauthz/redisstore has one on
// Redis or Valkey. Implementations must be safe for concurrent use.
type ReplayStore interface {
	// Remember records key until the instant until and reports whether it
	// was not recorded already (first is true for exactly one of any number
	// of concurrent calls with one key, on any replica sharing the store).
	// A key recorded earlier whose until has passed counts as not recorded.
	// It must honour ctx's deadline and cancellation; on any error the
	// Verifier refuses the proof, whatever first says.
	//
	// key is at most 64 bytes of base64url text: a digest of the proof's
	// key thumbprint and jti, from which neither can be recovered.
	Remember(ctx context.Context, key string, until time.Time) (first bool, err error)
}

// ChargedReplayStore is a [ReplayStore] that charges each record to the
// key whose proof made it, and bounds how many records one key holds: the
// Verifier's [WithReplayKeyLimit] then applies with the store as it does
// in memory, so one caller's proofs cannot fill a store that every replica
// shares (a Redis with a memory bound refuses every write once full: every
// other client's proof, at every replica). A Verifier whose store
// implements it calls RememberCharged instead of Remember; a store that
// does not keeps Remember's behaviour: no bound per key (each accepted
// proof a record until its window ends). github.com/orgauthz/orgauthz/redisstore's
// ReplayStore implements it.
type ChargedReplayStore interface {
	ReplayStore
	// RememberCharged is Remember, charging the record to owner and
	// keeping at most limit records of it, as the in-memory cache keeps
	// of one key: when the owner holds limit, its oldest record (by iat)
	// is dropped to make room, and from then on the owner's proofs dated
	// no later than the newest record it dropped are refused, with an
	// error wrapping [ErrReplayCacheFull] and nothing written (such a
	// proof cannot be told from that record's replay). So a fresh proof
	// always passes, however many the key sends (a-fix13d: a count that
	// refused every proof of a busy key locked out every caller of a
	// service signing with it). A replay of a record held is still
	// answered first == false. It must be atomic with the record: two
	// concurrent calls of one owner cannot both take the last place.
	//
	// owner is at most 64 bytes of base64url text: a digest of the
	// proof's key thumbprint (not the thumbprint), the same for every
	// proof of one key; limit is the Verifier's [WithReplayKeyLimit]; iat
	// is the proof's iat and until the record's end, as for Remember.
	RememberCharged(ctx context.Context, key, owner string, limit int, iat, until time.Time) (first bool, err error)
}

// ErrKeyspaceNew is what a [ReplayStore]'s error wraps when the store
// refuses because its keyspace began too recently to hold every earlier
// record of what it was asked about (its keys were lost: Redis restarted,
// was flushed or restored, failed over, or is new). For a DPoP proof
// that is transient: the Verifier refuses it with
// [ErrReplayStoreUnavailable] (wrapping this error too), and a fresh
// proof passes once the keyspace is older than the proofs' window,
// maxSkew plus [ReplayStoreMargin] after it began (70 s with the
// defaults). For a record about a credential issued before that (the
// reference server's revocations, code spends and sign-outs:
// mockserver.SharedStore) it is final: the store will never vouch for
// that credential, and a new one is needed.
// github.com/orgauthz/orgauthz/redisstore's ReplayStore wraps it.
var ErrKeyspaceNew = errors.New("dpop: the replay store's keyspace is younger than the record asked about")

// ReplayStoreTimeout bounds each call of a [ReplayStore], whatever the
// caller's context allows: a store that does not answer in time refuses
// the proof with [ErrReplayStoreUnavailable] rather than hold the request.
const ReplayStoreTimeout = 2 * time.Second

// ReplayStoreMargin is how long a [ReplayStore] keeps a proof past the end
// of its iat window (maxAge after iat, see [WithIATWindow]). The store's
// clock decides when a key expires, each replica's clock whether an iat is
// in the window; the margin covers replicas whose clocks run behind the
// store's by up to this much. A replica further behind could accept the
// replay of a proof whose key the store has let go.
const ReplayStoreMargin = time.Minute

// WithReplayStore makes the Verifier record accepted proofs in s instead of
// its in-memory replay cache, so that replicas sharing s detect each
// other's replays. A nil s makes NewVerifier fail. With a store,
// [WithReplayCacheSize] has no effect. [WithReplayKeyLimit] applies when s
// is a [ChargedReplayStore] (redisstore's is): a proof of a key holding its
// limit of records in the store is refused with [ErrReplayCacheFull], for
// that key only; with any other store it has no effect, and
// ErrReplayCacheFull is never returned. [ErrReplayStoreUnavailable] is,
// whenever the store fails, panics (on a goroutine of the Verifier's own,
// recovered) or does not answer within its context (bounded by
// [ReplayStoreTimeout]). A proof is recorded until maxAge after its iat
// plus [ReplayStoreMargin].
//
// The store's atomic Remember is the replay check and the record in one:
// [Verifier.Check] cannot look a proof up without recording it, so with a
// store it leaves the replay check to [Verifier.Record] (or
// [Verifier.RecordContext]), which refuses a replay with [ErrReplay].
// [Verifier.Verify] does both, so no proof is accepted unchecked.
func WithReplayStore(s ReplayStore) Option {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, errors.New("dpop: WithReplayStore: nil ReplayStore"))
			return
		}
		c.store = s
	}
}

// storeKey returns the key a proof of the key with thumbprint jkt and the
// given jti is recorded under in a ReplayStore: base64url of
// SHA-256(jkt || 0 || jti), 43 bytes. It bounds the key's size whatever the
// client puts in jti and carries nothing a reader of the store could reuse.
func storeKey(jkt, jti string) string {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
}

// storeOwner returns the owner a proof of the key with thumbprint jkt is
// charged to in a ChargedReplayStore: base64url of the first 16 bytes of
// SHA-256("owner" || 0 || jkt), 22 bytes. It is not the thumbprint (a
// reader of the store learns no key's identity), and 128 bits leave no
// caller a way to make its key share another's count.
func storeOwner(jkt string) string {
	h := sha256.New()
	h.Write([]byte("owner"))
	h.Write([]byte{0})
	h.Write([]byte(jkt))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:16])
}

// errStorePanicked is the error of a ReplayStore whose Remember panicked.
var errStorePanicked = errors.New("the replay store panicked")

// rememberResult is what one call of ReplayStore.Remember returned.
type rememberResult struct {
	first bool
	err   error
}

// recordInStore records the proof res describes in v's store, refusing it
// with ErrReplay if the store had it, ErrReplayStoreUnavailable if the
// store failed or did not answer within ctx (bounded by
// ReplayStoreTimeout), and ErrIATTooOld if the proof's window ended while
// the store was being asked.
func (v *Verifier) recordInStore(ctx context.Context, res *Result, expires time.Time) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, ReplayStoreTimeout)
	defer cancel()
	// The store runs in its own goroutine so that one ignoring ctx still
	// cannot hold the request past it; the buffered channel lets that
	// goroutine finish whenever the store returns.
	done := make(chan rememberResult, 1)
	key, until := storeKey(res.Thumbprint, res.Claims.ID), expires.Add(ReplayStoreMargin)
	go func() {
		// The store is the user's code on a goroutine of the Verifier's
		// own (safego): a panic there would end the process. It refuses
		// the proof instead (the request may have stopped waiting for it).
		r := rememberResult{err: errStorePanicked}
		defer func() { done <- r }()
		if safego.Call(func() { r.first, r.err = v.remember(ctx, res.Thumbprint, key, res.Claims.IssuedAt, until) }) != nil {
			r = rememberResult{err: errStorePanicked}
		}
	}()
	var r rememberResult
	select {
	case r = <-done:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrReplayStoreUnavailable, context.Cause(ctx))
	}
	switch {
	case errors.Is(r.err, ErrReplayCacheFull):
		return ErrReplayCacheFull // this key's own bound, as in memory
	case r.err != nil:
		return fmt.Errorf("%w: %w", ErrReplayStoreUnavailable, r.err)
	case !r.first:
		return ErrReplay
	}
	// The clock is read again after the store answered: a process frozen
	// (or starved) between the iat check and the store's answer may have
	// let the store forget another replica's record of this proof, which
	// happens only once the proof's window, and the margin, are over.
	if v.clock().After(expires) {
		return ErrIATTooOld
	}
	return nil
}

// remember records key in v's store: charged to the proof's key (jkt) with
// v's per-key limit when the store is a ChargedReplayStore, by Remember
// otherwise.
func (v *Verifier) remember(ctx context.Context, jkt, key string, iat, until time.Time) (bool, error) {
	if cs, ok := v.store.(ChargedReplayStore); ok {
		return cs.RememberCharged(ctx, key, storeOwner(jkt), v.keyLimit, iat, until)
	}
	return v.store.Remember(ctx, key, until)
}
