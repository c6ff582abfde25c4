package mockserver

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/safego"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// This file is what replicas behind one front share beyond the realms'
// keys and DPoP proofs. The rule: anything a client carries from one
// request to the next (an authorization code, a search's page token, a web
// UI session cookie), and anything that refuses a credential (a revoked
// token, a redeemed code, a logged-out session), is the same at every
// replica. What a client carries is sealed or signed with keys derived
// from the key seed (WithKeySeed; random per process without one); what
// refuses a credential is recorded in the shared store (WithReplayStore)
// and read by every replica on every use: a replica that cannot read it
// refuses the credential (503), never serves it.

// SharedStore is what replicas share (WithReplayStore): a
// dpop.ReplayStore that can also be read, and written once with a check
// that fits records other than DPoP proofs. The server records in it the
// DPoP proofs it accepts (Remember), and the access tokens revoked, the
// authorization codes redeemed and the web UI sessions logged out
// (RecordOnce), under keys that are base64url SHA-256 digests (43 bytes)
// from which no token, code or session can be recovered. The binary's
// -redis store is one, and so is redisstore.ReplayStore. The server bounds
// every call itself (dpop.ReplayStoreTimeout, on a goroutine of its own),
// whatever the store's configuration: a store that does not answer in time
// is unavailable (503), never a grant.
type SharedStore interface {
	dpop.ReplayStore
	// Recorded reports whether key was recorded by Remember or RecordOnce
	// and its until has not passed. It fails when the store cannot vouch
	// for every record made since since (its keyspace is younger than
	// since, less dpop.ReplayStoreMargin: Redis lost its keys, restarted
	// (from a snapshot, which may lack the newest writes), or is new), its
	// error then wrapping dpop.ErrKeyspaceNew, and on any error of the
	// store; the server then refuses what it asked about: for good (401
	// invalid_token, invalid_grant, a new sign-in) when the error wraps
	// dpop.ErrKeyspaceNew, as no retry can pass, and with 503 and
	// Retry-After otherwise. It must honour ctx's deadline and be safe for
	// concurrent use.
	Recorded(ctx context.Context, key string, since time.Time) (bool, error)
	// RecordOnce records key until until, its value writer, unless it is
	// recorded, and reports whether the record is the caller's: it was
	// not recorded (the caller's record is the first), or it holds writer
	// (the caller's own earlier call wrote it and then failed: too few
	// replicas acknowledged it, or its answer came late). A record of
	// another writer is false. writer (1 to 64 bytes) is a digest of what
	// makes the same request recognisable and nobody else's: a code's
	// spend gives an HMAC of the code, the client and its secret, the
	// redirect URI, the PKCE verifier and the DPoP key, so that only its
	// redeemer's retry passes; a revocation or a sign-out, the same
	// whoever asks again, gives one constant. Remember's records (DPoP
	// proofs, strictly one-time) are no RecordOnce's. It decides BEFORE
	// writing whether the store can vouch for every record
	// made since since, by Recorded's rule (since is when the credential
	// was issued: no record about it can be older), and fails without
	// writing when it cannot (an error wrapping dpop.ErrKeyspaceNew, as
	// Recorded's), and on any error before the write: a call
	// that fails leaves nothing that changes the answer to its retry
	// (but what its keyspace's loss itself changes). Unlike Remember it
	// applies no DPoP proof window. It must honour ctx's deadline and be
	// safe for concurrent use.
	RecordOnce(ctx context.Context, key, writer string, until, since time.Time) (bool, error)
	// Finish marks key's record, which RecordOnce found writer's, as
	// answered on, in one atomic step, and reports whether this call did:
	// of a writer's calls (a request repeated, or sent twice at once to
	// two replicas) exactly one finishes the record, and no later
	// RecordOnce or Finish of writer finds it its own. The server issues
	// a code's tokens only to the call that finished its spend. A record
	// finished already, another writer's, or none is false without an
	// error. An error (the finish may have been written) refuses the
	// request. It must honour ctx's deadline and be safe for concurrent
	// use.
	Finish(ctx context.Context, key, writer string) (bool, error)
}

// errSharedUnavailable is the error of a credential whose state the shared
// store could not tell: it is refused with 503 and Retry-After.
var errSharedUnavailable = errors.New("the shared store is unavailable; retry shortly")

// errSharedPredates is the error of a credential issued before the shared
// store's keyspace began, or within dpop.ReplayStoreMargin after (the
// store's error wraps dpop.ErrKeyspaceNew): the store can never vouch that
// no replica refused it, so it is refused for good, as an invalid
// credential (401 invalid_token, invalid_grant, the login page), never as
// an outage: a 503 would have clients retry it, and hold their breakers
// open, until it expires, when a new one is served at once.
var errSharedPredates = errors.New("the credential predates the shared store's keyspace (Redis lost its keys, restarted or failed over, or is new), which cannot vouch that no replica refused it: get a new one")

// Labels of the shared store's keys and of the keys derived from the seed:
// distinct, so that no record or key of one kind stands for another. They
// hold no NUL byte, as every HKDF info of the realms' keys does
// (issuer.SeededKey), so no derived key is a realm's key material.
const (
	labelRevoked   = "orgauthz mockserver revoked token"
	labelCodeSpent = "orgauthz mockserver authorization code spent"
	labelLogout    = "orgauthz mockserver web UI logout"
	// labelIssueProbe names no record: issueRefusal reads it to learn
	// whether the store vouches for a credential about to be issued.
	labelIssueProbe = "orgauthz mockserver issue probe"

	labelPageKey     = "orgauthz mockserver AuthZEN page token key"
	labelSessionKey  = "orgauthz mockserver web UI session key"
	labelCodeKey     = "orgauthz mockserver authorization code key"
	labelRedeemerKey = "orgauthz mockserver authorization code redeemer key"
)

// anyWriter is the writer of the one-time records that are the same
// whoever asks again (revocations, sign-outs): a retry finds its record
// its own, as a twin's request does, and answers as the first did.
const anyWriter = "-"

// sharedKey returns the shared store's key of the record of kind (a
// label) about realm's id: a base64url SHA-256 digest, 43 bytes.
func sharedKey(kind, realm, id string) string {
	h := sha256.New()
	for _, p := range []string{kind, realm, id} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// sharedRecorded reports whether the record of kind about realm's id is in
// the shared store: false without a store; errSharedPredates when the
// store cannot vouch for records made since since; errSharedUnavailable
// when it fails otherwise or does not answer within
// dpop.ReplayStoreTimeout.
func (s *Server) sharedRecorded(ctx context.Context, kind, realm, id string, since time.Time) (bool, error) {
	if s.shared == nil {
		return false, nil
	}
	key := sharedKey(kind, realm, id)
	return s.sharedCall(ctx, func(ctx context.Context) (bool, error) {
		return s.shared.Recorded(ctx, key, since)
	})
}

// sharedRecord records kind about realm's id, a credential issued at
// since, written by writer (SharedStore.RecordOnce), in the shared store
// until until, by this server's clock, and reports whether the record is
// the caller's (new, or writer's own): true without a store;
// errSharedPredates when the store cannot vouch for records made since
// since; errSharedUnavailable when it fails otherwise or does not answer
// within dpop.ReplayStoreTimeout.
// The store expires the record by its own clock, so it is kept
// dpop.ReplayStoreMargin longer: a replica whose clock runs behind the
// store's by up to that margin, still taking the credential for live,
// still finds the record. Callers change their own state only after it
// succeeded, so that a call answered 503 leaves nothing behind here that
// changes the answer to its retry.
func (s *Server) sharedRecord(ctx context.Context, kind, realm, id, writer string, until, since time.Time) (bool, error) {
	if s.shared == nil {
		return true, nil
	}
	key, until := sharedKey(kind, realm, id), until.Add(dpop.ReplayStoreMargin)
	return s.sharedCall(ctx, func(ctx context.Context) (bool, error) {
		return s.shared.RecordOnce(ctx, key, writer, until, since)
	})
}

// sharedFinish finishes the record of kind about realm's id that
// sharedRecord found writer's (SharedStore.Finish) and reports whether
// this call finished it (the one call that may answer on it): true
// without a store; errSharedPredates and errSharedUnavailable as
// sharedRecord.
func (s *Server) sharedFinish(ctx context.Context, kind, realm, id, writer string) (bool, error) {
	if s.shared == nil {
		return true, nil
	}
	key := sharedKey(kind, realm, id)
	return s.sharedCall(ctx, func(ctx context.Context) (bool, error) {
		return s.shared.Finish(ctx, key, writer)
	})
}

// errSharedPanicked is the failure of a shared store call that panicked.
var errSharedPanicked = errors.New("the shared store panicked")

// sharedResult is what one call of the shared store returned.
type sharedResult struct {
	ok  bool
	err error
}

// sharedCall runs call against the shared store within ctx and
// dpop.ReplayStoreTimeout, as the DPoP verifier bounds its own calls of
// the same store: on a goroutine of its own, so that a store ignoring its
// context (a frozen Redis, a client without timeouts) still cannot hold
// the request past the bound; the buffered channel lets that goroutine
// finish whenever the store returns. A keyspace too young for the
// credential (an error wrapping dpop.ErrKeyspaceNew) is errSharedPredates;
// any other failure, the bound's and a panic's included, is
// errSharedUnavailable (both logged without the key).
func (s *Server) sharedCall(ctx context.Context, call func(context.Context) (bool, error)) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, dpop.ReplayStoreTimeout)
	defer cancel()
	done := make(chan sharedResult, 1)
	go func() {
		// The store is the user's code on a goroutine of the server's
		// own: its panic, recovered, is a failing store (503), never the
		// end of the server. The panic's text is not kept: it may hold
		// the key.
		var r sharedResult
		if safego.Call(func() { r.ok, r.err = call(ctx) }) != nil {
			r = sharedResult{err: errSharedPanicked}
		}
		done <- r
	}()
	var r sharedResult
	select {
	case r = <-done:
	case <-ctx.Done():
		r.err = context.Cause(ctx)
	}
	switch {
	case errors.Is(r.err, dpop.ErrKeyspaceNew):
		s.logger.Info("shared store refused a credential older than its keyspace", "err", r.err)
		return false, errSharedPredates
	case r.err != nil:
		s.logger.Warn("shared store unavailable", "err", r.err)
		return false, errSharedUnavailable
	}
	return r.ok, nil
}

// derivedKey returns a 32-byte key for label: derived from seed (HKDF-
// SHA256) when there is one, so that every replica given the seed has the
// same; random otherwise.
func derivedKey(seed []byte, label string) []byte {
	if seed != nil {
		k, err := hkdf.Key(sha256.New, seed, nil, label, 32)
		if err == nil {
			return k
		}
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// keyspaceTokenRetryAfter is the Retry-After, in seconds, of the token
// endpoint's 503 while the shared store's keyspace is too young to vouch
// for a token issued now: one issued dpop.ReplayStoreMargin after the
// keyspace began (iat counts whole seconds: a second more) is served.
var keyspaceTokenRetryAfter = strconv.Itoa(int(dpop.ReplayStoreMargin.Seconds()) + 1)

// keyspaceYoungMessage is the message of the refusal to issue a credential (a token, an
// authorization code, a web UI session) that the shared store could never
// vouch for: 503, Retry-After keyspaceTokenRetryAfter.
var keyspaceYoungMessage = "the shared store's keyspace is new (Redis lost its keys, restarted or failed over) and cannot vouch yet for a credential issued now; retry within " + keyspaceTokenRetryAfter + " s"

// issueRefusal reports why a credential issued now (at issued: its iat,
// the code's or session's start) must not be handed out: the shared store
// could never vouch for it (its keyspace is too young: every replica would
// refuse it for good, and a client told to get a new one would get
// another such), or the store cannot be asked (a credential issued while
// Redis restarts or fails over would predate the keyspace it comes back
// with: refused for good on its first use). The answer is a
// *issueRefused, nil when the credential may be issued, and always nil
// without a store.
func (s *Server) issueRefusal(ctx context.Context, realm, id string, issued time.Time) *issueRefused {
	switch _, err := s.sharedRecorded(ctx, labelIssueProbe, realm, id, issued); {
	case errors.Is(err, errSharedPredates):
		return &issueRefused{message: keyspaceYoungMessage, retryAfter: keyspaceTokenRetryAfter, young: true}
	case err != nil:
		return &issueRefused{message: errSharedUnavailable.Error(), retryAfter: proofRetryAfter}
	}
	return nil
}

// issueRefused is a refusal to issue a credential: 503 (the OAuth
// endpoints: temporarily_unavailable) with its Retry-After; young when the
// keyspace is too young, else the store could not be asked.
type issueRefused struct {
	message, retryAfter string
	young               bool
}

// Error makes an issueRefused an error (IssueToken's).
func (e *issueRefused) Error() string { return e.message }

// Unwrap is dpop.ErrKeyspaceNew for a keyspace too young, else nil.
func (e *issueRefused) Unwrap() error {
	if e.young {
		return dpop.ErrKeyspaceNew
	}
	return nil
}

// vouchedToken is the token endpoint's issueRefusal for claims' token,
// just minted: 503 temporarily_unavailable with Retry-After.
func (s *Server) vouchedToken(ctx context.Context, w http.ResponseWriter, realm string, claims *issuer.Claims) *oauthError {
	ir := s.issueRefusal(ctx, realm, claims.ID, issuedAt(claims))
	if ir == nil {
		return nil
	}
	w.Header().Set("Retry-After", ir.retryAfter)
	return oauthErrorf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", said(ir.message))
}

// sharedOAuthUnavailable is an OAuth endpoint's answer to
// errSharedUnavailable: 503 temporarily_unavailable with Retry-After.
func sharedOAuthUnavailable(w http.ResponseWriter) *oauthError {
	w.Header().Set("Retry-After", proofRetryAfter)
	return oauthErrorf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", said(errSharedUnavailable.Error()))
}
