package mockserver

import (
	"crypto/rand"
	"encoding/base64"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// This file binds tokens to the processes that can see their refusals.
// The rule: a token is served only by a process that can see every
// refusal that could apply to it. A credential that outlives the process
// must have refusals that outlive it: with a key seed (WithKeySeed) the
// signing keys outlive the process, while without a shared store
// (WithReplayStore) the revocations (revocation.go) are the process's
// memory. A revocation made at another process (an earlier run of this
// one, or another replica) can never be known there, and no clock orders
// processes (a clock stepped back, or a replica's clock behind this
// one's, makes a token stamped before a restart look minted after it).
//
// So every token carries the scope of the refusals of the process that
// minted it (the boot claim): without a shared store, the id of that
// process (random per process); with one, sharedBoot, the same for every
// process whose refusals are in a shared store. A process serves only the
// tokens whose boot claim is its own scope, whatever their stamps say;
// every other token (one without the claim included) is refused as
// revoked until it expires; fail closed, get a new token. So a server
// without a shared store serves only the tokens it minted itself, and a
// server with one serves every replica's tokens but never those of a
// process whose refusals were its own memory (a replica started without
// -redis by mistake, an earlier run without it). A process frozen
// (SIGSTOP) for any time keeps its scope, and its clock plays no part, so
// neither freezing nor a clock step changes an answer.
//
// A provisioned tenant's tokens also carry the tenant's id (a random id
// per provisioning, the tenant's incarnation, store.Realm.Incarnation):
// a tenant lives in the memory of the process that provisioned it, which
// alone can decommission it, so a token is served only by the realm of
// its name whose incarnation it names (auth.go, verifyToken). A restart,
// another replica, or a re-provisioning of the name is another
// incarnation and refuses it, shared store or not: no refusal of a tenant
// (its decommission) can be forgotten while its tokens are served.
//
// Authorization codes without a shared store are this process's memory
// too (authcode.go): a restart forgets every code, which is then refused.
// UI sessions use a random key per process without a shared store
// (webui_session.go), for the same rule.

// sharedBoot is the boot claim of every token minted by a process with a
// shared store: every such process sees the refusals of every other.
// A process without one never has it as its id (its id is 22 base64url
// characters).
const sharedBoot = "shared"

// bootEpoch is the scope of this process's refusals, as tokens carry it.
type bootEpoch struct {
	id string // the boot claim of every token this process mints and serves
}

// newBootEpoch returns the epoch of a starting process, whose refusals
// are its own memory when bound (no shared store): a random id; with a
// shared store, sharedBoot.
func newBootEpoch(bound bool) bootEpoch {
	if !bound {
		return bootEpoch{id: sharedBoot}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return bootEpoch{id: base64.RawURLEncoding.EncodeToString(b)}
}

// stamp marks c as minted by this process.
func (e bootEpoch) stamp(c *issuer.Claims) { c.Boot = e.id }

// refuses reports whether a verified token with claims c must be refused
// as possibly revoked where this process cannot see it: its boot claim is
// not this process's scope (a token without one included).
func (e bootEpoch) refuses(c *issuer.Claims) bool {
	return c.Boot != e.id
}
