package middleware

import (
	"errors"
	"slices"
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
// caller's. Only an explicit grant of every pair res lists, with no error,
// is AnswerGrant; an error it does not know is AnswerUnavailable (no
// decision), never a grant. It cannot know which pairs were asked: a
// guard uses ClassifyAsked, which also requires res to decide exactly
// those. It is safe for concurrent use.
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

// ClassifyAsked is Classify for a guard that asked one resource's scopes,
// which every guard of this module and its adapters is: the answer is
// AnswerGrant only when res decides every pair asked, each by GRANTs
// alone, and nothing it did not ask. A result Classify would grant that
// leaves an asked pair undecided, or names a pair not asked, is no
// decision (AnswerUnavailable):
// a Checker other than *pep.Client (a wrapper, a merging cache, a test
// double) may answer so, and Classify, which cannot know what was asked,
// reads only what res lists (a-edge16b F2: a result granting orders/read
// alone, or public/read, let a request guarded by orders/read and
// orders/delete through). It is safe for concurrent use.
func ClassifyAsked(resource string, scopes []string, res pep.Result, err error, clientToken bool) Answer {
	a := Classify(res, err, clientToken)
	if a == AnswerGrant && !decidesExactly(resource, scopes, res.Decisions) {
		return AnswerUnavailable
	}
	return a
}

// decidesExactly reports whether ds names every (resource, scope) of
// scopes and no other pair.
func decidesExactly(resource string, scopes []string, ds []pep.Decision) bool {
	for _, d := range ds {
		if d.Resource != resource || !slices.Contains(scopes, d.Scope) {
			return false
		}
	}
	for _, s := range scopes {
		if !slices.ContainsFunc(ds, func(d pep.Decision) bool { return d.Scope == s }) {
			return false
		}
	}
	return true
}

// Checkable reports whether resource and scopes name something a Checker
// may be asked about: a resource other than "" and the wildcard "*", and
// at least one scope, none of them empty, every name valid UTF-8 (which
// JSON carries as written; pep refuses any other). A guard answers
// anything else AnswerDenied without asking.
func Checkable(resource string, scopes []string) bool { return fastcheck.Askable(resource, scopes) }
