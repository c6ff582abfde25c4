package middleware_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// TestClassify: the one rule every guard and adapter answers by. Only
// every pair granted with no error lets a request through; an outage is
// told from a denial, and the client's own token's trouble from the
// caller's.
func TestClassify(t *testing.T) {
	t.Parallel()
	grant := pep.Decision{Resource: "orders", Scope: "read", Status: pep.Grant}
	deny := pep.Decision{Resource: "orders", Scope: "write", Status: pep.Deny}
	down := pep.Decision{Resource: "orders", Scope: "write", Status: pep.Deny, Cause: fmt.Errorf("dial: %w", pep.ErrUnavailable)}
	evaluated := pep.Decision{Resource: "orders", Scope: "write", Status: pep.Error, Cause: pep.ErrNotEvaluated}
	result := func(ds ...pep.Decision) pep.Result {
		r := pep.Result{Status: pep.Grant, Decisions: ds}
		for _, d := range ds {
			if !d.Allowed() {
				r.Status = pep.Deny
			}
		}
		return r
	}
	for _, tc := range []struct {
		name        string
		res         pep.Result
		err         error
		clientToken bool
		want        middleware.Answer
	}{
		{"every pair granted", result(grant, grant), nil, false, middleware.AnswerGrant},
		{"no pair at all", pep.Result{}, nil, false, middleware.AnswerDenied},
		{"one pair denied", result(grant, deny), nil, false, middleware.AnswerDenied},
		{"a pair the gateway did not evaluate", result(grant, evaluated), nil, false, middleware.AnswerDenied},
		{"a denial beside an outage", result(deny, down), nil, false, middleware.AnswerDenied},
		{"only an outage", result(grant, down), nil, false, middleware.AnswerUnavailable},
		{"the caller's token refused", pep.Result{}, pep.ErrUnauthorized, false, middleware.AnswerUnauthorized},
		{"the client's own token refused", pep.Result{}, pep.ErrUnauthorized, true, middleware.AnswerUnavailable},
		{"no caller token", pep.Result{}, pep.ErrNoToken, false, middleware.AnswerUnauthorized},
		{"no client token", pep.Result{}, pep.ErrNoToken, true, middleware.AnswerUnavailable},
		{"a call the client refuses", pep.Result{}, pep.ErrInvalidArgument, false, middleware.AnswerDenied},
		{"an error nobody foresaw", result(grant), errors.New("something else"), false, middleware.AnswerUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, middleware.Classify(tc.res, tc.err, tc.clientToken))
		})
	}
}

// TestAnswerString: each class names itself in logs and test failures.
func TestAnswerString(t *testing.T) {
	t.Parallel()
	for a, want := range map[middleware.Answer]string{
		middleware.AnswerGrant:        "Grant",
		middleware.AnswerDenied:       "Denied",
		middleware.AnswerUnauthorized: "Unauthorized",
		middleware.AnswerUnavailable:  "Unavailable",
		middleware.Answer(9):          "Answer(9)",
	} {
		require.Equal(t, want, a.String())
	}
}
