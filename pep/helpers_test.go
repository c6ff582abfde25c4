package pep_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// The realm and client of the tests' gateways: the reference server's shop
// fixture (reference_test.go) and the stand-ins use the same names.
const (
	testRealm  = "acme"
	testClient = "orders-api"
)

// newManualClock returns a clock that moves only when told to.
func newManualClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
}

// noRetry keeps tests of single answers to one request each.
var noRetry = pep.WithRetry(0, 0, 0)

// gwHook may answer a request in the gateway's place, to inject a fault: it
// returns true when it wrote the response. n counts the gateway's requests
// from 1.
type gwHook func(w http.ResponseWriter, r *http.Request, n int) bool

// statusHook answers every request with status and the service's error body.
func statusHook(status int) gwHook {
	return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		writeError(w, status, "injected")
		return true
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes the service's error body shape.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"error": http.StatusText(status), "message": message})
}

// requireGatewayDecision asserts a decision the gateway made.
func requireGatewayDecision(t *testing.T, d pep.Decision, want pep.Status) {
	t.Helper()
	requireGatewayCause(t, d)
	assert.Equal(t, want, d.Status)
	assert.Equal(t, want == pep.Grant, d.Allowed())
}

// requireGatewayCause asserts that d is the gateway's word, not a
// fail-closed denial: no Cause, but ErrNotEvaluated for an ERROR answer.
func requireGatewayCause(t *testing.T, d pep.Decision) {
	t.Helper()
	if d.Status == pep.Error {
		require.ErrorIs(t, d.Cause, pep.ErrNotEvaluated, "%s/%s", d.Resource, d.Scope)
		return
	}
	require.NoError(t, d.Cause, "%s/%s", d.Resource, d.Scope)
}

// roundTripFunc is an http.RoundTripper that answers with a function,
// sending nothing, for answers and faults the reference server cannot
// give.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cannedResponse returns a new response to r of status and body, of no
// stated length (as a chunked answer).
func cannedResponse(r *http.Request, status int, body []byte) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%03d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: -1,
		Request:       r,
	}
}

// checked is c.Check of resource and scope with the test's context,
// failing the test on an error.
func checked(t *testing.T, c *pep.Client, resource, scope string, opts ...pep.CallOption) pep.Decision {
	t.Helper()
	return checkedIn(t, c, t.Context(), resource, scope, opts...)
}

// mustPep is hangguard.NewPep, failing the test on an error, and closed when
// the test ends.
func mustPep(t testing.TB, gateway, realm, clientID string, opts ...pep.Option) *pep.Client {
	t.Helper()
	c := testkit.Must(hangguard.NewPep(gateway, realm, clientID, opts...))(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// checkedIn is c.Check with ctx, failing the test on an error.
func checkedIn(t *testing.T, c *pep.Client, ctx context.Context, resource, scope string, opts ...pep.CallOption) pep.Decision {
	t.Helper()
	return testkit.Must(c.Check(ctx, resource, scope, opts...))(t)
}

// checkedMany is c.CheckMany with ctx, failing the test on an error.
func checkedMany(t *testing.T, c *pep.Client, ctx context.Context, resources []pep.Resource, opts ...pep.CallOption) pep.Result {
	t.Helper()
	return testkit.Must(c.CheckMany(ctx, resources, opts...))(t)
}
