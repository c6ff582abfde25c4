package mockserver

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/orgauthz/orgauthz/dpop"
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
// dpop.ReplayStore that can also be read. The server records in it the
// DPoP proofs it accepts, the access tokens revoked, the authorization
// codes redeemed and the web UI sessions logged out, under keys that are
// base64url SHA-256 digests (43 bytes) from which no token, code or
// session can be recovered. The binary's -redis store is one.
type SharedStore interface {
	dpop.ReplayStore
	// Recorded reports whether key was recorded by Remember and its until
	// has not passed. It fails when the store cannot vouch for every
	// record made since since (its keyspace is younger than since, less
	// dpop.ReplayStoreMargin: Redis lost its keys, or is new), and on any
	// error of the store; the server then refuses what it asked about. It
	// must honour ctx's deadline and be safe for concurrent use.
	Recorded(ctx context.Context, key string, since time.Time) (bool, error)
}

// errSharedUnavailable is the error of a credential whose state the shared
// store could not tell: it is refused with 503 and Retry-After.
var errSharedUnavailable = errors.New("the shared store is unavailable; retry shortly")

// Labels of the shared store's keys and of the keys derived from the seed:
// distinct, so that no record or key of one kind stands for another. They
// hold no NUL byte, as every HKDF info of the realms' keys does
// (issuer.SeededKey), so no derived key is a realm's key material.
const (
	labelRevoked   = "orgauthz mockserver revoked token"
	labelCodeSpent = "orgauthz mockserver authorization code spent"
	labelLogout    = "orgauthz mockserver web UI logout"

	labelPageKey    = "orgauthz mockserver AuthZEN page token key"
	labelSessionKey = "orgauthz mockserver web UI session key"
	labelCodeKey    = "orgauthz mockserver authorization code key"
)

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
// the shared store: false without a store; errSharedUnavailable when the
// store cannot tell (for records made since since).
func (s *Server) sharedRecorded(ctx context.Context, kind, realm, id string, since time.Time) (bool, error) {
	if s.shared == nil {
		return false, nil
	}
	ok, err := s.shared.Recorded(ctx, sharedKey(kind, realm, id), since)
	if err != nil {
		s.logger.Warn("shared store unavailable", "err", err)
		return false, errSharedUnavailable
	}
	return ok, nil
}

// sharedRecord records kind about realm's id in the shared store until
// until, by this server's clock, and reports whether it was not recorded
// already: true without a store; errSharedUnavailable when the store
// fails. The store expires the record by its own clock, so it is kept
// dpop.ReplayStoreMargin longer: a replica whose clock runs behind the
// store's by up to that margin, still taking the credential for live,
// still finds the record.
func (s *Server) sharedRecord(ctx context.Context, kind, realm, id string, until time.Time) (bool, error) {
	if s.shared == nil {
		return true, nil
	}
	first, err := s.shared.Remember(ctx, sharedKey(kind, realm, id), until.Add(dpop.ReplayStoreMargin))
	if err != nil {
		s.logger.Warn("shared store unavailable", "err", err)
		return false, errSharedUnavailable
	}
	return first, nil
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

// sharedOAuthUnavailable is an OAuth endpoint's answer to
// errSharedUnavailable: 503 temporarily_unavailable with Retry-After.
func sharedOAuthUnavailable(w http.ResponseWriter) *oauthError {
	w.Header().Set("Retry-After", proofRetryAfter)
	return &oauthError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", description: errSharedUnavailable.Error()}
}
