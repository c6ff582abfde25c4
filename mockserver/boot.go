package mockserver

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// This file binds tokens to the process whose memory holds their
// refusals. A credential that outlives the process must have refusals
// that outlive it: with a key seed (WithKeySeed) the signing keys outlive
// the process, while without a shared store (WithReplayStore) the
// revocations (revocation.go) are the process's memory. A revocation made
// at another process (an earlier run of this one, or another replica) can
// never be known here, and no clock orders processes (a clock stepped
// back, or a replica's clock behind this one's, makes a token stamped
// before a restart look minted after it). So a server without a shared
// store serves only the access tokens it minted itself: every token
// carries the id of the process that minted it (the boot claim, random per
// process), and a token whose boot claim is not this process's id is
// refused as revoked, whatever its stamps say, until it expires; fail
// closed, get a new token. A process frozen (SIGSTOP) for any time keeps
// its id, and its clock plays no part, so neither freezing nor a clock
// step changes an answer. With a shared store nothing here applies:
// revocations are shared and outlive every process, and every replica
// serves every replica's tokens.
//
// Authorization codes without a shared store are this process's memory
// too (authcode.go): a restart forgets every code, which is then refused.
// UI sessions use a random key per process without a shared store
// (webui_session.go), for the same rule.

// bootEpoch is this process's id, as tokens carry it.
type bootEpoch struct {
	id string // the boot claim of every token this process mints
	// bound reports that refusals are this process's memory (no shared
	// store): tokens minted by another process are refused.
	bound bool
}

// newBootEpoch returns the epoch of a starting process, whose refusals
// are its own memory when bound.
func newBootEpoch(bound bool) bootEpoch {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return bootEpoch{id: base64.RawURLEncoding.EncodeToString(b), bound: bound}
}

// stamp marks c as minted by this process.
func (e bootEpoch) stamp(c *issuer.Claims) { c.Boot = e.id }

// refuses reports whether a verified token with claims c must be refused
// as possibly revoked at another process: refusals are this process's
// memory and c was not minted by this process (a token without a boot
// claim included).
func (e bootEpoch) refuses(c *issuer.Claims) bool {
	return e.bound && c.Boot != e.id
}
