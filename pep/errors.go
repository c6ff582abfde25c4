package pep

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
)

var (
	// ErrUnauthorized is matched (with errors.Is) by the *ResponseError of a
	// gateway 401: the token was refused. The client purges the token's
	// cached decisions and, for its own current token, emits tokenExpired.
	// A 401 that blames the DPoP proof rather than the token matches
	// [ErrProofRejected] instead.
	ErrUnauthorized = errors.New("pep: unauthorized")

	// ErrProofRejected is matched by the *ResponseError of a gateway 401
	// whose DPoP challenge says error="invalid_dpop_proof": the proof, not
	// the token, was refused (a clock out of step, say). The token stays:
	// nothing is purged and no event is emitted.
	ErrProofRejected = errors.New("pep: DPoP proof rejected")

	// ErrNotEvaluated is the Cause of an ERROR decision: the gateway could
	// not evaluate the pair, because its resource or scope is not defined
	// on the client (a misspelt name, say). It never allows.
	ErrNotEvaluated = errors.New("pep: the gateway could not evaluate the pair: its resource or scope is not defined on the client")

	// ErrInvalidArgument is matched by the error of a call the client
	// refuses to send because the call itself is malformed: an empty
	// resource or scope, the wildcard resource "*" outside ListGranted, no
	// resources at all. The decisions are DENY and nothing is sent.
	ErrInvalidArgument = errors.New("pep: invalid argument")

	// ErrNoToken is returned, without any request being sent, when a call
	// has no usable token: neither the client's (SetToken) nor a per-call
	// one (WithToken), or the token cannot be sent in an HTTP header.
	ErrNoToken = errors.New("pep: no token")

	// ErrUnavailable is matched by the Cause of a decision the client denied
	// because the gateway could not be reached or did not answer in time, by
	// [ErrCircuitOpen], and by a *ResponseError with a 5xx status.
	ErrUnavailable = errors.New("pep: gateway unavailable")

	// ErrCircuitOpen is the Cause of a decision denied without calling the
	// gateway because the circuit breaker is open (see WithBreaker).
	// errors.Is(ErrCircuitOpen, ErrUnavailable) is true.
	ErrCircuitOpen error = &chainedError{msg: "pep: circuit breaker open", parent: ErrUnavailable}

	// ErrMalformedResponse is wrapped by the Err field of a *ResponseError
	// for a 200 answer the client could not use: a body that does not parse
	// or exceeds 1 MiB, an unknown status value, a requested pair that is
	// missing, or a pair returned twice with different statuses.
	ErrMalformedResponse = errors.New("pep: malformed gateway response")
)

// chainedError is a sentinel that also matches a more general sentinel.
type chainedError struct {
	msg    string
	parent error
}

func (e *chainedError) Error() string { return e.msg }
func (e *chainedError) Unwrap() error { return e.parent }

// ResponseError describes a gateway answer the client could not take as a
// decision: any status other than 200, or a 200 whose body was unusable (Err
// then wraps [ErrMalformedResponse]). Inspect it with errors.As; errors.Is
// matches [ErrUnauthorized] for a 401 (or [ErrProofRejected] when the 401
// blames the DPoP proof) and [ErrUnavailable] for a 5xx.
//
// The text fields come from the gateway and are cut to a few hundred bytes;
// a field that held any part of the request's token, in any escaping, is
// withheld as a whole.
type ResponseError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// ErrorName is the "error" field of the service's error body, e.g.
	// "Forbidden"; empty when the body had none.
	ErrorName string
	// Message is the "message" field of the error body, or what was wrong
	// with a 200 body.
	Message string
	// Challenge is the WWW-Authenticate header of the answer, if any.
	Challenge string
	// Err is the reason a 200 answer was unusable; it wraps
	// ErrMalformedResponse. Nil for other statuses.
	Err error

	// dpop is what the DPoP challenge of a 401 to a DPoP request said.
	dpop dpopVerdict
	// namesClient is set for a 400 whose body blames the clientId.
	namesClient bool
}

// dpopVerdict is what a 401's DPoP challenge blames.
type dpopVerdict uint8

const (
	dpopNone          dpopVerdict = iota
	dpopProofRejected             // error="invalid_dpop_proof": the proof, not the token
	dpopNonceOwed                 // error="use_dpop_nonce", still owed after the one resend
)

// Error returns "pep: gateway answered <status>" followed by the error name
// and message. It never contains a token.
func (e *ResponseError) Error() string {
	var b strings.Builder
	b.WriteString("pep: gateway answered ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	text := http.StatusText(e.StatusCode)
	if text != "" {
		b.WriteString(" " + text)
	}
	if e.ErrorName != "" && e.ErrorName != text {
		b.WriteString(" (" + e.ErrorName + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Err != nil { // the package prefix is written once
		b.WriteString(": " + strings.TrimPrefix(e.Err.Error(), "pep: "))
	}
	return b.String()
}

// Is reports whether the answer matches target: ErrUnauthorized for a 401
// that refuses the token, ErrProofRejected for a 401 that refuses the DPoP
// proof, ErrUnavailable for a 5xx.
func (e *ResponseError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized && e.dpop != dpopProofRejected
	case ErrProofRejected:
		return e.StatusCode == http.StatusUnauthorized && e.dpop == dpopProofRejected
	case ErrUnavailable:
		return e.StatusCode >= 500 && e.StatusCode <= 599
	}
	return false
}

// Unwrap returns Err.
func (e *ResponseError) Unwrap() error { return e.Err }
