package mockserver

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
)

// This file binds tokens to the process whose memory holds their
// refusals. A credential that outlives the process must have refusals
// that outlive it: with a key seed (WithKeySeed) the signing keys outlive
// the process, while without a shared store (WithReplayStore) the
// revocations (revocation.go) are the process's memory, so a token revoked
// before a restart would verify again after it. A server without a shared
// store therefore refuses, as revoked, every access token minted before it
// started by any other process: only its own tokens, and those another
// replica minted after it started, can have been refused by no one it
// remembers.
//
// Every token carries the id of the process that minted it (the boot
// claim) and its issue time in nanoseconds (iat_ns; iat has whole
// seconds, too coarse for a restart within a second), read from the
// server's clock, the one that stamps iat. A process accepts its own
// tokens whatever its clock says since: a step back of the clock after
// start (NTP correcting a clock that ran ahead) refuses none of them. It
// accepts another process's token only when that token's iat_ns is later
// than its own start by the same clock reading: a token of another
// replica stamped before this one started (or stamped by a clock behind
// this one's start reading, such as a clock stepped back, or a replica's
// clock behind this one's) is refused until it expires; fail closed, get
// a new token. A process frozen (SIGSTOP) for any time keeps its start and
// its id, so freezing changes no answer. With a shared store nothing here
// applies: revocations are shared and outlive every process.
//
// Authorization codes without a shared store are this process's memory
// too (authcode.go): a restart forgets every code, which is then refused.
// UI sessions use a random key per process without a shared store
// (webui_session.go), for the same rule.

// bootEpoch is this process's id and start, as tokens carry them.
type bootEpoch struct {
	id    string // the boot claim of every token this process mints
	start int64  // the start, in nanoseconds since the Unix epoch, by the server's clock
	// bound reports that refusals are this process's memory (no shared
	// store): tokens minted by another process before start are refused.
	bound bool
}

// newBootEpoch returns the epoch of a process starting at start, whose
// refusals are its own memory when bound.
func newBootEpoch(start time.Time, bound bool) bootEpoch {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return bootEpoch{id: base64.RawURLEncoding.EncodeToString(b), start: start.UnixNano(), bound: bound}
}

// stamp marks c, whose iat is now, as minted by this process.
func (e bootEpoch) stamp(c *issuer.Claims, now time.Time) {
	c.Boot = e.id
	c.IssuedNanos = now.UnixNano()
}

// refuses reports whether a verified token with claims c must be refused
// as issued before this process started: refusals are this process's
// memory, c was minted by another process, and not after this one
// started (a token without iat_ns included).
func (e bootEpoch) refuses(c *issuer.Claims) bool {
	return e.bound && c.Boot != e.id && c.IssuedNanos <= e.start
}
