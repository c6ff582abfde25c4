package authzen

import (
	"errors"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// The sentinels that describe the PDP, the credential and the transport
// are the very values of package pep (both re-export internal/transport's),
// so errors.Is matches them across the two clients. The errors the client
// returns say that authzen spoke ("authzen: circuit breaker open") and
// match them.
var (
	// ErrUnauthorized is matched by the *ResponseError of a PDP 401: the
	// PEP's credential was refused. The client purges the credential's
	// cached decisions and, for its current credential, emits tokenExpired
	// once. For a DPoP token only an explicit verdict against it counts: a
	// DPoP challenge whose error is invalid_token (or any error but the two
	// of ErrProofRejected), or a 401 with no DPoP signal at all or whose
	// body, as the PDP sent it, could not be read whole (one the client
	// could not finish reading is no verdict: unless what came refuses the
	// credential, the evaluation fails ErrUnavailable); a 400 or 403
	// naming invalid_token, in a challenge or its body, refuses the
	// credential too, and when an answer is resent for a nonce a refusal
	// in either answer wins. A 401 to
	// the discovery request, which carries no credential, matches neither
	// it nor ErrProofRejected: it is an ErrDiscovery.
	ErrUnauthorized = transport.ErrUnauthorized
	// ErrProofRejected is matched by the *ResponseError of a 401 to a DPoP
	// request that blames the proof rather than the token: its DPoP
	// challenge says error="invalid_dpop_proof", or "use_dpop_nonce" still
	// after the one resend, in a DPoP challenge or its JSON body's "error"
	// (RFC 9449 section 8), and nothing in the answer refuses the token
	// (error="invalid_token" in any challenge or the body wins). Nothing
	// is purged and no event is emitted. A DPoP request whose 401 or 400
	// carries a new DPoP-Nonce is resent once with it, unless the answer
	// refuses the token.
	ErrProofRejected = transport.ErrProofRejected
	// ErrNoToken is returned, without a request, when the client has no
	// usable credential (SetToken, SetDPoPToken): none, one an HTTP header
	// cannot carry, or one longer than WithMaxTokenBytes allows.
	ErrNoToken = transport.ErrNoToken
	// ErrUnavailable is matched by the Cause of a decision denied because
	// the PDP could not be reached or did not answer in time (its answer
	// read after the call's deadline included; or its discovery document
	// could not be read), or because a DPoP key not held in memory did not
	// sign the proof in time (see SetDPoPToken), by ErrCircuitOpen, and by
	// a *ResponseError with a 5xx status.
	ErrUnavailable = transport.ErrUnavailable
	// ErrCircuitOpen is the Cause of a decision denied without a request
	// because the circuit breaker is open. It matches ErrUnavailable.
	ErrCircuitOpen = transport.ErrCircuitOpen
	// ErrMalformedResponse is wrapped by the Err of a *ResponseError for a
	// 200 answer the client could not use: it does not parse strictly, a
	// decision is not a JSON boolean, it has more evaluations than asked,
	// or fewer than the evaluation semantic allows.
	ErrMalformedResponse = transport.ErrMalformedResponse
	// ErrClosed is returned, with denials and without any request, by
	// every call made after Close.
	ErrClosed = transport.ErrClosed
	// ErrTokenChanged is the Cause of a decision denied because the
	// client's credential was replaced or cleared (SetToken, SetDPoPToken,
	// ClearToken) while the call that used it was under way: no retry or
	// nonce resend goes out with the old credential, an answer arriving
	// after the change is not used, and nothing is cached. The error is
	// nil; ask again. It does not match ErrUnavailable and does not count
	// against the breaker.
	ErrTokenChanged = transport.ErrTokenChanged
)

var (
	// ErrInvalidArgument is matched by the error of a call the client
	// refuses to send: a request without subject type and id, action name
	// or resource type and id, no items, an unknown evaluation semantic, a
	// string anywhere in a question (names, ids, types, property and
	// context keys and values at any depth) that is not valid UTF-8, which
	// JSON would carry as another string (the error names the field, never
	// its bytes). The decisions are denials; nothing is sent or cached.
	ErrInvalidArgument = errors.New("authzen: invalid argument")

	// ErrEvaluationFailed is the Cause of a decision whose evaluation the
	// PDP reported as failed: its context carries an "error" member (the
	// decision's Context holds it). It never allows.
	ErrEvaluationFailed = errors.New("authzen: the PDP reported an error for the evaluation")

	// ErrNotEvaluated is the Cause of a batch item the PDP did not
	// evaluate because an earlier item ended the batch under the
	// deny_on_first_deny or permit_on_first_permit semantic. It never
	// allows.
	ErrNotEvaluated = errors.New("authzen: the item was not evaluated: an earlier item ended the batch")

	// ErrDiscovery is matched by the error of New's discovery when the
	// PDP's metadata cannot be used, and wrapped in the Cause of decisions
	// denied for that reason.
	ErrDiscovery = errors.New("authzen: the PDP's metadata (/.well-known/authzen-configuration) is unusable")
)

// ResponseError describes a PDP answer the client could not take as a
// decision: any status other than 200, or a 200 whose body was unusable (Err
// then wraps ErrMalformedResponse). It is one type with pep.ResponseError,
// so one errors.As serves both clients; its Error text reads
// "authzen: PDP answered <status>...". Text from the PDP that held 8 or
// more consecutive characters of the token, escaped or not, or a long
// opaque run, is withheld as a whole (see pep.ResponseError).
type ResponseError = transport.ResponseError

// BreakerState is the state of the client's circuit breaker (Stats); one
// type with pep.BreakerState.
type BreakerState = transport.BreakerState

// pdp names the PDP in errors and log lines.
const pdp = transport.Peer("authzen: PDP")
