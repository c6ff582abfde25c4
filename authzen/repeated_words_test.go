package authzen_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// assertPDPRepeatLocksNobodyOut runs a client whose own (shared) token's
// allow is cached against a PDP that answers every request whose body
// holds marker with answer, and allows every other; change makes the
// caller's request from the cached one. The shared token must stay: no
// ErrUnauthorized, no tokenExpired, the cached allow still served.
func assertPDPRepeatLocksNobodyOut(t *testing.T, marker string, answer func(http.ResponseWriter), change func(*authzen.Request)) {
	t.Helper()
	srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(marker)) {
			answer(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"decision":true}`))
	})
	var mu sync.Mutex
	var kinds []events.Kind
	c := mustAuthZEN(t, srv.URL, authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation"}),
		authzen.WithHTTPClient(srv.Client()), authzen.WithRetry(0, 0, 0),
		authzen.WithEventHandler(func(ev events.Event) { mu.Lock(); kinds = append(kinds, ev.Kind); mu.Unlock() }))
	c.SetToken("the-service-own-token")
	cached := authzen.Request{Subject: authzen.Subject{Type: "user", ID: "alice"}, Action: authzen.Action{Name: "can_read"},
		Resource: authzen.Resource{Type: "document", ID: "42"}}
	d, err := c.Evaluate(t.Context(), cached)
	require.NoError(t, err)
	require.True(t, d.Allowed())

	attack := cached
	change(&attack) // the caller's choice
	d, err = c.Evaluate(t.Context(), attack)
	if err == nil {
		err = d.Cause
	}
	assert.NotErrorIs(t, err, authzen.ErrUnauthorized, "the PDP only repeated the caller's words: %v", err)
	mu.Lock()
	got := slices.Clone(kinds)
	mu.Unlock()
	assert.False(t, slices.Contains(got, events.TokenExpired), "a caller's words retired the shared token: %v", got)
	d, err = c.Evaluate(t.Context(), cached)
	require.NoError(t, err)
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached allow must stay; cached=%v", d.Cached)
}

// answering returns an answer of status with a body of content type ct.
func answering(status int, ct, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// resourceID makes the caller's request ask about resource id.
func resourceID(id string) func(*authzen.Request) {
	return func(r *authzen.Request) { r.Resource.ID = id }
}

// TestAPDPRepeatingAResourceIDRetiresNoToken: a PDP that answers a
// request for a resource it does not know with a 400/403 repeating the
// request's resource id (a caller's choice, e.g. from a URL path) as a
// JSON value of its own retires no token when that id is invalid_token
// (a-read17 F1: it was read as a refusal of the client's own token, and
// any caller retired it for every caller, their cached allows purged).
func TestAPDPRepeatingAResourceIDRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"400 echoing the resource", 400, `{"error":"invalid_request","message":"unknown resource","resource":{"type":"document","id":"invalid_token"}}`},
		{"403 echoing the resource id", 403, `{"error":"forbidden","resourceId":"invalid_token"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assertPDPRepeatLocksNobodyOut(t, `"invalid_token"`, answering(tc.status, "application/json", tc.body), resourceID("invalid_token"))
		})
	}
}

// TestAnEscapedResourceIDRepeatedRetiresNoToken: pep's
// TestAnEscapedWordRepeatedRetiresNoToken for a PDP and a resource id
// (a-fix17 F1).
func TestAnEscapedResourceIDRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	const id = `invalid\u005ftoken`
	for _, tc := range []struct {
		name, ct, body string
		status         int
	}{
		{"400 plain text", "text/plain", "unknown resource " + id + "\n", 400},
		{"403 JSON templated without escaping", "application/json", `{"error":"forbidden","resourceId":"` + id + `"}`, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assertPDPRepeatLocksNobodyOut(t, `invalid\\u005ftoken`, answering(tc.status, tc.ct, tc.body), resourceID(id))
		})
	}
}

// TestAnEscapedPropertyRepeatedRetiresNoToken: a property sent as raw
// JSON holding the word escaped ("invalid\u005ftoken"), which the PDP reads
// as invalid_token and repeats, retires no token (a-fix17 F7).
func TestAnEscapedPropertyRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	// the PDP decoded the request's JSON and repeats the value as JSON again
	assertPDPRepeatLocksNobodyOut(t, `invalid\u005ftoken`,
		answering(http.StatusBadRequest, "application/json", `{"error":"invalid_request","message":"unknown property value","value":"invalid_token"}`),
		func(r *authzen.Request) {
			r.Resource.Properties = map[string]any{"label": json.RawMessage(`"invalid\u005ftoken"`)} // the caller's JSON
		})
}

// TestAQuotedPairSpelledResourceIDInAChallengeRetiresNoToken: pep's
// TestAQuotedPairSpelledWordInAChallengeRetiresNoToken for a PDP and a
// resource id (a-fix17c F5).
func TestAQuotedPairSpelledResourceIDInAChallengeRetiresNoToken(t *testing.T) {
	t.Parallel()
	const id = `42", error="inv\alid_token`
	assertPDPRepeatLocksNobodyOut(t, `alid_token`, func(w http.ResponseWriter) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", resource="`+id+`"`)
		answering(http.StatusForbidden, "application/json", `{"error":"forbidden"}`)(w)
	}, resourceID(id))
}
