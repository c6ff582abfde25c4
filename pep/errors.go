package pep

import (
	"errors"

	"github.com/orgauthz/orgauthz/internal/transport"
)

// The sentinels that describe the gateway, the token and the transport
// are internal/transport's values, shared with package authzen: errors.Is
// matches them across the two clients. The errors the client returns say
// that pep spoke ("pep: circuit breaker open") and match them; compare
// with errors.Is, not ==.
var (
	// ErrUnauthorized is matched (with errors.Is) by the *ResponseError of a
	// gateway 401: the token was refused. The client purges the token's
	// cached decisions and, for its own current token, emits tokenExpired.
	// For a DPoP token only an explicit verdict against it counts: a DPoP
	// challenge whose error is invalid_token (or any error but the two of
	// [ErrProofRejected]), or a 401 that carries no DPoP signal at all or
	// whose body, as the gateway sent it, could not be read whole (one the
	// client could not finish reading, cut by the call's deadline or a
	// reset, is no verdict: unless what came refuses the token, the call
	// fails [ErrUnavailable]). A 400 or 403 naming invalid_token, in a
	// challenge or its body, refuses the token too. When an answer is
	// resent for a nonce, a refusal of the token in either answer wins. A
	// 401 that blames the DPoP proof rather than the token matches
	// [ErrProofRejected] instead.
	ErrUnauthorized = transport.ErrUnauthorized

	// ErrProofRejected is matched by the *ResponseError of a gateway 401 to
	// a DPoP request that blames the proof, not the token: its DPoP
	// challenge says error="invalid_dpop_proof" (a clock out of step, say),
	// or error="use_dpop_nonce" still after the one resend with the nonce
	// the gateway gave, in a DPoP challenge or in its JSON body's "error"
	// (RFC 9449 section 8's {"error":"use_dpop_nonce"}), and nothing in
	// the answer refuses the token: error="invalid_token" in any of its
	// challenges, or in its body, wins over a proof or nonce error. The
	// token stays: nothing is purged and no event is emitted, so a handler
	// that refreshes tokens on ErrUnauthorized is not asked to replace a
	// valid one. A DPoP request whose 401 or 400 carries a new DPoP-Nonce
	// is resent once with it, however the answer asks for it, unless the
	// answer refuses the token.
	ErrProofRejected = transport.ErrProofRejected

	// ErrNotEvaluated is the Cause of an ERROR decision: the gateway could
	// not evaluate the pair, because its resource or scope is not defined
	// on the client (a misspelt name, say). It never allows.
	ErrNotEvaluated = errors.New("pep: the gateway could not evaluate the pair: its resource or scope is not defined on the client")

	// ErrInvalidArgument is matched by the error of a call the client
	// refuses to send because the call itself is malformed: an empty
	// resource or scope, the wildcard resource "*" outside ListGranted, no
	// resources at all, a resource or scope name or a request context field
	// (headers included) that is not valid UTF-8, which JSON would send as
	// another string (the error names the field, never its bytes). The
	// decisions are DENY; nothing is sent or cached.
	ErrInvalidArgument = errors.New("pep: invalid argument")

	// ErrNoToken is returned, without any request being sent, when a call
	// has no usable token: neither the client's (SetToken) nor a per-call
	// one (WithToken), or the token cannot be sent in an HTTP header, or it
	// is longer than WithMaxTokenBytes allows. Its text says which, never
	// quoting the token.
	ErrNoToken = transport.ErrNoToken

	// ErrUnavailable is matched by the Cause of a decision the client denied
	// because the gateway could not be reached or did not answer in time
	// (its answer read after the call's deadline included), or because a
	// DPoP key not held in memory did not sign the proof in time (see
	// SetDPoPToken), by [ErrCircuitOpen], and by a *ResponseError with a 5xx
	// status. A Cause of a passed deadline also matches
	// context.DeadlineExceeded.
	ErrUnavailable = transport.ErrUnavailable

	// ErrCircuitOpen is the Cause of a decision denied without calling the
	// gateway because the circuit breaker is open (see WithBreaker).
	// errors.Is(ErrCircuitOpen, ErrUnavailable) is true.
	ErrCircuitOpen = transport.ErrCircuitOpen

	// ErrMalformedResponse is wrapped by the Err field of a *ResponseError
	// for a 200 answer the client could not use: a body that does not parse
	// or exceeds 1 MiB, an unknown status value, a requested pair that is
	// missing, or a pair returned twice with different statuses.
	ErrMalformedResponse = transport.ErrMalformedResponse

	// ErrClosed is returned, with DENY decisions and without any request
	// being sent, by every call made after Close: a misuse, like a call
	// without a token. It matches neither ErrNoToken (the caller's token
	// is not at fault; the middleware gives it the unavailable answer) nor
	// ErrUnavailable.
	ErrClosed = transport.ErrClosed

	// ErrTokenChanged is the Cause of a decision denied because the
	// client's own token was replaced or cleared (SetToken, SetDPoPToken,
	// ClearToken) while the call that used it was under way. The call
	// fails closed at its next step: no retry or DPoP nonce resend is sent
	// with the old token, an answer that arrives after the change is not
	// used, and nothing is cached for either token. The error is nil, as
	// for every fail-closed denial; ask again to be decided with the new
	// token. It does not match ErrUnavailable (the gateway is not at fault)
	// and does not count against the circuit breaker. Calls with a per-call
	// token (WithToken) are never stopped this way.
	ErrTokenChanged = transport.ErrTokenChanged
)

// ResponseError describes a gateway answer the client could not take as a
// decision: any status other than 200, or a 200 whose body was unusable (Err
// then wraps [ErrMalformedResponse]). Inspect it with errors.As; errors.Is
// matches [ErrUnauthorized] for a 401 (or [ErrProofRejected] when the 401
// blames the DPoP proof) and [ErrUnavailable] for a 5xx. Its Error text
// reads "pep: gateway answered <status>...".
//
// The text fields (StatusCode int; ErrorName, Message, Challenge string;
// Err error) come from the gateway and are cut to 512 bytes; a field that
// held 8 or more consecutive characters of the request's token (verbatim,
// escaped, or on its letters and digits in any case), or a run of more
// than 32 characters without white space (what any other encoding of it
// looks like), is withheld as a whole. A fragment of at most 7 characters
// can show.
//
// It is one type with authzen.ResponseError, so that one errors.As serves
// both clients.
type ResponseError = transport.ResponseError

// gateway names the gateway in pep's errors and log lines.
const gateway = transport.Peer("pep: gateway")

// malformed is the Cause of a pair (or a chunk) whose 200 answer was
// unusable. Its arguments are the client's own words and numbers, never
// text from the answer.
func malformed(format string, args ...any) *ResponseError {
	return gateway.Malformed(format, args...)
}
