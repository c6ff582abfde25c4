package authzen_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

const pepToken = "pep-token-0123456789abcdef"

// standIn starts a stand-in PDP (internal/gatewaytest) that answers every
// request with h, and a client of it; it is for faults a real PDP does not
// make on demand.
func standIn(t *testing.T, h http.HandlerFunc, opts ...authzen.Option) (*authzen.Client, *gatewaytest.Server) {
	t.Helper()
	srv := gatewaytest.Start(t, h)
	opts = append([]authzen.Option{
		authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation", Evaluations: "/access/v1/evaluations"}),
		authzen.WithRetry(0, 0, 0), authzen.WithBreaker(0, 0), authzen.WithTimeout(2 * time.Second),
	}, opts...)
	c := mustAuthZEN(t, srv.URL, opts...)
	c.SetToken(pepToken)
	return c, srv
}

// evaluated is c.Evaluate of req with the test's context, failing the
// test on an error.
func evaluated(t *testing.T, c *authzen.Client, req authzen.Request, opts ...authzen.CallOption) authzen.Decision {
	t.Helper()
	return testkit.Must(c.Evaluate(t.Context(), req, opts...))(t)
}

// evaluatedAll is c.Evaluations with the test's context, failing the test
// on an error.
func evaluatedAll(t *testing.T, c *authzen.Client, defaults authzen.Request, items []authzen.Request, opts ...authzen.CallOption) []authzen.Decision {
	t.Helper()
	return testkit.Must(c.Evaluations(t.Context(), defaults, items, opts...))(t)
}

// mustAuthZEN is hangguard.NewAuthZEN, failing the test on an error, and closed when
// the test ends.
func mustAuthZEN(t testing.TB, pdp string, opts ...authzen.Option) *authzen.Client {
	t.Helper()
	c := testkit.Must(hangguard.NewAuthZEN(pdp, opts...))(t)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// answer answers every request with status and a JSON body.
func answer(status int, body string) http.HandlerFunc {
	return gatewaytest.Answer(status, "application/json", body)
}

var req = authzen.Request{
	Subject:  authzen.Subject{Type: "user", ID: "alice"},
	Action:   authzen.Action{Name: "can_read"},
	Resource: authzen.Resource{Type: "document", ID: "1"},
}

// TestEvaluateFailsClosed names every path from a PDP answer to a denial
// that is authzen's own (an item's context carries an error whatever the
// case of its name or its value), and one row of each kind of Cause the transport
// gives (403: a *ResponseError; 503: ErrUnavailable too). How the transport
// classes every status, redirect, timeout and unreachable server is tested
// once, in internal/transport's TestPostOutcomes and pep's TestFailClosed.
func TestEvaluateFailsClosed(t *testing.T) {
	t.Parallel()
	huge := `{"decision":true,"context":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`
	tests := []struct {
		name  string
		pdp   http.HandlerFunc
		cause error
	}{
		{"decision false", answer(200, `{"decision":false}`), nil},
		{"decision as a string", answer(200, `{"decision":"true"}`), authzen.ErrMalformedResponse},
		{"decision as a number", answer(200, `{"decision":1}`), authzen.ErrMalformedResponse},
		{"decision null", answer(200, `{"decision":null}`), authzen.ErrMalformedResponse},
		{"no decision", answer(200, `{"context":{}}`), authzen.ErrMalformedResponse},
		{"decision twice", answer(200, `{"decision":false,"decision":true}`), authzen.ErrMalformedResponse},
		{"decision in another case", answer(200, `{"Decision":true}`), authzen.ErrMalformedResponse},
		{"trailing data", answer(200, `{"decision":true} {}`), authzen.ErrMalformedResponse},
		{"two unread members differing only in case", answer(200, `{"decision":true,"reason":"a","Reason":"b"}`), authzen.ErrMalformedResponse},
		{"a member twice inside an unread member", answer(200, `{"decision":true,"trace":{"a":1,"a":2}}`), authzen.ErrMalformedResponse},
		{"not JSON", answer(200, `decision: true`), authzen.ErrMalformedResponse},
		{"context not an object", answer(200, `{"decision":true,"context":[1]}`), authzen.ErrMalformedResponse},
		{"context with a duplicate", answer(200, `{"decision":true,"context":{"a":1,"a":2}}`), authzen.ErrMalformedResponse},
		{"context carries an error", answer(200, `{"decision":true,"context":{"error":{"status":500,"message":"boom"}}}`), authzen.ErrEvaluationFailed},
		{"context carries an error in another case", answer(200, `{"decision":true,"context":{"Error":{"m":"x"}}}`), authzen.ErrEvaluationFailed},
		{"context carries an error in capitals", answer(200, `{"decision":true,"context":{"ERROR":"x"}}`), authzen.ErrEvaluationFailed},
		{"context carries a null error", answer(200, `{"decision":true,"context":{"error":null}}`), authzen.ErrEvaluationFailed},
		{"context too large to decode cheaply", answer(200, `{"decision":true,"context":{"reason":[`+strings.Repeat(`{},`, 20<<10)+`{}]}}`), authzen.ErrMalformedResponse},
		{"body over 1 MiB", answer(200, huge), authzen.ErrMalformedResponse},
		{"403", answer(403, `{}`), nil},
		{"503", answer(503, `{}`), authzen.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := standIn(t, tt.pdp)
			d := testkit.Must(c.Evaluate(t.Context(), req))(t, "a PDP failure is a denial, not an error")
			assert.False(t, d.Allowed())
			if tt.name == "decision false" {
				assert.NoError(t, d.Cause)
				return
			}
			require.Error(t, d.Cause)
			if tt.cause != nil {
				require.ErrorIs(t, d.Cause, tt.cause)
			} else {
				var re *authzen.ResponseError
				require.ErrorAs(t, d.Cause, &re)
			}
			assert.NotContains(t, d.Cause.Error(), pepToken)
		})
	}
}

func TestEvaluateAllowsOnlyTrue(t *testing.T) {
	t.Parallel()
	var got http.Header
	c, _ := standIn(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		answer(200, `{"decision":true,"unknown":[1,2]}`)(w, r)
	})
	d := evaluated(t, c, req)
	assert.True(t, d.Allowed())
	assert.Equal(t, "Bearer "+pepToken, got.Get("Authorization"))
	assert.NotEmpty(t, got.Get("X-Request-ID"))
}

// TestEvaluateTakesNonASCIIContextAndExtensionNames: valid PDP answers with
// non-ASCII text grant. A context's keys are data; an extension member the
// client does not read, whose name is not ASCII, is valid AuthZEN (unknown
// members are ignored): only a name holding a letter some reader takes for
// ASCII letters (ı, ſ, ß) could name a known member, and only such a name
// is refused.
func TestEvaluateTakesNonASCIIContextAndExtensionNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body string }{
		{"non-ASCII context keys", `{"decision":true,"context":{"raison":"accès","région":"eu","Région":"EU","ſtatus":"x"}}`},
		{"escaped non-ASCII context key", `{"decision":true,"context":{"r\u00e9gion":"eu"}}`},
		{"non-ASCII value in an unread member", `{"decision":true,"reason":"accès accordé"}`},
		{"unread extension member with a non-ASCII name", `{"decision":true,"raison_accès":"ok"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := standIn(t, answer(200, tc.body))
			d, err := c.Evaluate(t.Context(), req)
			if err != nil || !d.Allowed() {
				t.Errorf("valid grant refused: err=%v cause=%v", err, d.Cause)
			}
		})
	}
}

func TestIncompleteRequestIsRefused(t *testing.T) {
	t.Parallel()
	c, n := standIn(t, answer(200, `{"decision":true}`))
	_, err := c.Evaluate(t.Context(), authzen.Request{Subject: authzen.Subject{Type: "user", ID: "a"}})
	require.ErrorIs(t, err, authzen.ErrInvalidArgument)
	assert.Zero(t, n.Requests())
}

// TestEvaluationsCountMismatch: more or fewer items than asked deny them all.
func TestEvaluationsCountMismatch(t *testing.T) {
	t.Parallel()
	items := []authzen.Request{{Resource: authzen.Resource{Type: "doc", ID: "1"}}, {Resource: authzen.Resource{Type: "doc", ID: "2"}}}
	defaults := authzen.Request{Subject: req.Subject, Action: req.Action}
	tests := map[string]string{
		"fewer":          `{"evaluations":[{"decision":true}]}`,
		"more":           `{"evaluations":[{"decision":true},{"decision":true},{"decision":true}]}`,
		"none":           `{"evaluations":[]}`,
		"missing member": `{}`,
		"twice":          `{"evaluations":[{"decision":true},{"decision":true}],"evaluations":[]}`,
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := standIn(t, answer(200, body))
			ds := evaluatedAll(t, c, defaults, items)
			require.Len(t, ds, 2)
			for _, d := range ds {
				assert.False(t, d.Allowed())
				require.ErrorIs(t, d.Cause, authzen.ErrMalformedResponse)
			}
		})
	}
}

func TestEvaluationsItemErrorDeniesOnlyThatItem(t *testing.T) {
	t.Parallel()
	c, _ := standIn(t, answer(200, `{"evaluations":[{"decision":true},{"decision":false,"context":{"error":{"status":404,"message":"Resource not found"}}},{"decision":false}]}`))
	ds := testkit.Must(c.Evaluations(t.Context(), authzen.Request{Subject: req.Subject, Action: req.Action}, []authzen.Request{
		{Resource: authzen.Resource{Type: "doc", ID: "1"}}, {Resource: authzen.Resource{Type: "doc", ID: "2"}}, {Resource: authzen.Resource{Type: "doc", ID: "3"}},
	}))(t)
	assert.True(t, ds[0].Allowed())
	require.ErrorIs(t, ds[1].Cause, authzen.ErrEvaluationFailed)
	assert.NotNil(t, ds[1].Context["error"])
	assert.False(t, ds[2].Allowed())
	assert.NoError(t, ds[2].Cause)
}

func TestDiscovery(t *testing.T) {
	t.Parallel()
	var srvURL string
	srv := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/authzen-configuration":
			answer(200, `{"policy_decision_point":"`+srvURL+`","access_evaluation_endpoint":"`+srvURL+`/access/v1/evaluation"}`)(w, r)
		case "/access/v1/evaluation":
			answer(200, `{"decision":true}`)(w, r)
		default:
			http.NotFound(w, r)
		}
	})
	srvURL = srv.URL
	c := mustAuthZEN(t, srv.URL)
	c.SetToken(pepToken)
	require.NoError(t, c.Discover(t.Context()))
	d := evaluated(t, c, req)
	assert.True(t, d.Allowed())

	mixUp := mustAuthZEN(t, srv.URL+"/other")
	mixUp.SetToken(pepToken)
	d = evaluated(t, mixUp, req)
	require.True(t, errors.Is(d.Cause, authzen.ErrDiscovery), "%v", d.Cause)
}
