package pep_test

// What the tests that use the stand-in gateway (internal/gatewaytest) share.
// The stand-in is for the faults no real gateway makes on demand and that
// need no real answer (a request held open, a body that never ends, a
// redirect elsewhere). Every other test runs against the reference server
// (reference_test.go), with a hook in front of it when a fault is needed.

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/pep"
)

const (
	// Opaque tokens the stand-in takes without looking.
	aliceToken = "alice-token.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
	bobToken   = "bob-token.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJl"
	faultToken = "fault-token.eyJzdWIiOiJmYXVsdCJ9.c2lnbmF0dXJl"
	// faultGrant grants orders/read, the pair the stand-in's tests ask.
	faultGrant = `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`
)

// faultOK answers with faultGrant.
func faultOK(w http.ResponseWriter) {
	gatewaytest.Answer(http.StatusOK, "application/json", faultGrant)(w, nil)
}

// wantUnavailable checks the Cause of a transport failure or timeout.
func wantUnavailable(also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		require.ErrorIs(t, cause, pep.ErrUnavailable)
		assert.NotErrorIs(t, cause, pep.ErrCircuitOpen)
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
		var re *pep.ResponseError
		assert.False(t, errors.As(cause, &re), "a transport failure is not a gateway answer: %v", cause)
	}
}

// wantAnswer checks the Cause of an unusable gateway answer.
func wantAnswer(status int, also ...error) func(*testing.T, error) {
	return func(t *testing.T, cause error) {
		t.Helper()
		var re *pep.ResponseError
		require.ErrorAs(t, cause, &re)
		assert.Equal(t, status, re.StatusCode)
		assert.Equal(t, status >= 500, errors.Is(cause, pep.ErrUnavailable))
		for _, e := range also {
			require.ErrorIs(t, cause, e)
		}
	}
}
