package middleware

import (
	"errors"
	"strconv"

	"github.com/orgauthz/orgauthz/internal/fastcheck"
	"github.com/orgauthz/orgauthz/pep"
)

// Answer is the class of answer a guard gives a request once the Checker
// was asked: the one rule shared by Require's guards and by the framework
// adapters (grpcpep, ginpep, echopep), so that none can answer a case
// otherwise than the middleware.
type Answer int

// The classes of answer, with the middleware's default answer of each.
const (
	// AnswerGrant lets the request through: every pair was granted.
	AnswerGrant Answer = iota
	// AnswerDenied is the denied answer (403): the gateway said no, or the
	// request named nothing it could be asked about.
	AnswerDenied
	// AnswerUnauthorized is the caller's 401: no usable token, or one the
	// gateway refused.
	AnswerUnauthorized
	// AnswerUnavailable is the outage answer (WithUnavailableHandler, 403
	// by default): no decision could be had, through no fault of the
	// caller's.
	AnswerUnavailable
)

// String names the class; a value outside the classes reads Answer(n).
func (a Answer) String() string {
	switch a {
	case AnswerGrant:
		return "Grant"
	case AnswerDenied:
		return "Denied"
	case AnswerUnauthorized:
		return "Unauthorized"
	case AnswerUnavailable:
		return "Unavailable"
	}
	return "Answer(" + strconv.Itoa(int(a)) + ")"
}

// Classify returns the class of answer for what a CheckMany call for one
// request returned: res and err, when clientToken tells whether the call
// carried the client's own token (WithClientToken) rather than the
// caller's. Only an explicit grant of every pair with no error is
// AnswerGrant; an error it does not know is AnswerUnavailable (no
// decision), never a grant. It is safe for concurrent use.
func Classify(res pep.Result, err error, clientToken bool) Answer {
	if err == nil { // every request answered, the cached ones too
		switch {
		case res.Allowed():
			return AnswerGrant
		case outage(res):
			return AnswerUnavailable
		}
		return AnswerDenied
	}
	switch {
	case errors.Is(err, pep.ErrUnauthorized) && clientToken:
		// The service's own token was refused: not the caller's doing, and
		// its refresh (on tokenExpired) is under way.
		return AnswerUnavailable
	case errors.Is(err, pep.ErrUnauthorized):
		return AnswerUnauthorized
	case errors.Is(err, pep.ErrInvalidArgument):
		return AnswerDenied
	case errors.Is(err, pep.ErrNoToken) && clientToken:
		// The service has no usable token of its own (not set yet, or
		// cleared by a refresh written as ClearToken then SetToken): no
		// decision could be had, and not by the caller's doing.
		return AnswerUnavailable
	case errors.Is(err, pep.ErrNoToken):
		return AnswerUnauthorized
	default:
		// A refused DPoP proof or anything unforeseen: no decision.
		return AnswerUnavailable
	}
}

// Checkable reports whether resource and scopes name something a Checker
// may be asked about: a resource other than "" and the wildcard "*", and
// at least one scope, none of them empty, every name valid UTF-8 (which
// JSON carries as written; pep refuses any other). A guard answers
// anything else AnswerDenied without asking.
func Checkable(resource string, scopes []string) bool { return fastcheck.Askable(resource, scopes) }
