package authzen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// The tests of this file hold what an attack on the first version of the
// client found; each failed before its fix.

// contextPDP allows exactly when the context the PDP ends up applying (an
// item's own, else the batch's) says net=trusted, as the specification's
// default values rule has it.
func contextPDP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m struct {
		Context     map[string]any   `json:"context"`
		Evaluations []map[string]any `json:"evaluations"`
	}
	_ = json.Unmarshal(b, &m)
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/evaluation") {
		fmt.Fprintf(w, `{"decision":%t}`, m.Context["net"] == "trusted")
		return
	}
	out := make([]string, len(m.Evaluations))
	for i, ev := range m.Evaluations {
		ctx := m.Context
		if c, ok := ev["context"].(map[string]any); ok {
			ctx = c
		}
		out[i] = fmt.Sprintf(`{"decision":%t}`, ctx["net"] == "trusted")
	}
	fmt.Fprintf(w, `{"evaluations":[%s]}`, strings.Join(out, ","))
}

// An item's empty context is left out of the JSON, so the PDP applies the
// batch's; the cache key must say so, or the allow made under the batch's
// context is served to a request with none.
func TestEmptyItemContextIsTheDefaults(t *testing.T) {
	t.Parallel()
	c, _ := standIn(t, contextPDP)
	item := req
	item.Context = map[string]any{}
	ds := evaluatedAll(t, c, authzen.Request{Context: map[string]any{"net": "trusted"}}, []authzen.Request{item})
	require.True(t, ds[0].Allowed(), "the PDP applied the batch's trusted context")

	d := evaluated(t, c, req)
	assert.False(t, d.Allowed(), "without a context the PDP denies (cached: %v)", d.Cached)
	ds = evaluatedAll(t, c, authzen.Request{Context: map[string]any{"net": "untrusted"}}, []authzen.Request{item})
	assert.False(t, ds[0].Allowed(), "under an untrusted batch context the PDP denies (cached: %v)", ds[0].Cached)
}

// Under a semantic that stops, the answer stops at the first item that
// ends the batch, and nothing after it is returned or cached, whatever the
// PDP says of it: the result must not depend on how the batch was cut
// into requests. A short answer (the PDP stopped) must end in the item
// that stops it. (TestShortCircuitAnswers's rows are the first three.)
func TestSemanticsStopWithinARequest(t *testing.T) {
	t.Parallel()
	items := []authzen.Request{
		{Resource: authzen.Resource{Type: "doc", ID: "1"}},
		{Resource: authzen.Resource{Type: "doc", ID: "2"}},
		{Resource: authzen.Resource{Type: "doc", ID: "3"}},
	}
	defaults := authzen.Request{Subject: req.Subject, Action: req.Action}
	notEvaluated, malformed := authzen.ErrNotEvaluated, authzen.ErrMalformedResponse
	tests := []struct {
		name    string
		s       authzen.Semantic
		body    string
		allowed []bool
		causes  []error // nil: no Cause
	}{
		{"deny_on_first_deny stops at a deny", authzen.DenyOnFirstDeny,
			`{"evaluations":[{"decision":true},{"decision":false,"context":{"code":"200","reason":"deny_on_first_deny"}}]}`,
			[]bool{true, false, false}, []error{nil, nil, notEvaluated}},
		{"a short answer that ends in a permit is malformed", authzen.DenyOnFirstDeny,
			`{"evaluations":[{"decision":true},{"decision":true}]}`,
			[]bool{false, false, false}, []error{malformed, malformed, malformed}},
		{"permit_on_first_permit stops at a permit", authzen.PermitOnFirstPermit,
			`{"evaluations":[{"decision":false},{"decision":true}]}`,
			[]bool{false, true, false}, []error{nil, nil, notEvaluated}},
		{"deny_on_first_deny, allows after a denial", authzen.DenyOnFirstDeny,
			`{"evaluations":[{"decision":false},{"decision":true},{"decision":true}]}`,
			[]bool{false, false, false}, []error{nil, notEvaluated, notEvaluated}},
		{"deny_on_first_deny, allows after an error", authzen.DenyOnFirstDeny,
			`{"evaluations":[{"decision":true,"context":{"error":{"m":"x"}}},{"decision":true},{"decision":true}]}`,
			[]bool{false, false, false}, []error{authzen.ErrEvaluationFailed, notEvaluated, notEvaluated}},
		{"permit_on_first_permit, answers after a permit", authzen.PermitOnFirstPermit,
			`{"evaluations":[{"decision":true},{"decision":false},{"decision":true}]}`,
			[]bool{true, false, false}, []error{nil, notEvaluated, notEvaluated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := standIn(t, answer(200, tt.body))
			ds := evaluatedAll(t, c, defaults, items, authzen.WithSemantic(tt.s))
			require.Len(t, ds, len(items))
			decided := 0
			for i, d := range ds {
				assert.Equal(t, tt.allowed[i], d.Allowed(), "item %d", i)
				if tt.causes[i] == nil {
					assert.NoError(t, d.Cause, "item %d", i)
					decided++
				} else {
					assert.ErrorIs(t, d.Cause, tt.causes[i], "item %d", i)
				}
			}
			assert.LessOrEqual(t, c.Stats().CacheEntries, decided, "only the items the PDP decided may be cached")
		})
	}
}

// A caller waiting for another caller's discovery keeps its own deadline,
// and Discover is bounded by the client's timeout.
func TestDiscoveryKeepsDeadlines(t *testing.T) {
	t.Parallel()
	srv := gatewaytest.Start(t, func(_ http.ResponseWriter, r *http.Request) { gatewaytest.Hold(r) })
	c := mustAuthZEN(t, srv.URL, authzen.WithRetry(0, 0, 0), authzen.WithTimeout(time.Hour))
	c.SetToken(pepToken)
	started := make(chan struct{})
	go func() {
		close(started)
		_ = c.Discover(t.Context()) // holds the discovery until the test ends
	}()
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	done := make(chan authzen.Decision, 1)
	go func() {
		d, err := c.Evaluate(ctx, req)
		assert.NoError(t, err)
		done <- d
	}()
	var d authzen.Decision
	select {
	case d = <-done:
	case <-time.After(10 * time.Second): // a failure, not a wait: the deadline is 50 ms
		t.Fatal("Evaluate waited for another caller's discovery long past its deadline")
	}
	assert.False(t, d.Allowed())
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "Evaluate returned only once its deadline had passed")
	assert.ErrorIs(t, d.Cause, authzen.ErrDiscovery)

	short := mustAuthZEN(t, srv.URL, authzen.WithRetry(0, 0, 0), authzen.WithTimeout(50*time.Millisecond))
	assert.ErrorIs(t, short.Discover(t.Context()), authzen.ErrDiscovery, "Discover ends with the client's timeout")
}

// A discovery document the client cannot trust is refused, and the
// credential goes nowhere: one that moves an endpoint to another origin
// (the credential goes to every endpoint), and, read by the one strict
// rule (internal/strictjson), one that names an endpoint again in another
// case, or only in another case.
func TestDiscoveryKeepsEndpointsOnThePDPsOrigin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, doc string }{ // PDP and ELSEWHERE stand for the two origins
		{"another origin", `{"policy_decision_point":"PDP","access_evaluation_endpoint":"ELSEWHERE/access/v1/evaluation"}`},
		{"an endpoint named again in another case", `{"policy_decision_point":"PDP","access_evaluation_endpoint":"PDP/access/v1/evaluation","Access_Evaluation_Endpoint":"PDP/other"}`},
		{"an endpoint named only in another case", `{"Policy_Decision_Point":"PDP","access_evaluation_endpoint":"PDP/access/v1/evaluation"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			elsewhere := gatewaytest.Start(t, answer(200, `{"decision":true}`))
			pdp := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/.well-known/authzen-configuration" {
					answer(200, `{"decision":true}`)(w, r)
					return
				}
				answer(200, strings.NewReplacer("PDP", "https://"+r.Host, "ELSEWHERE", elsewhere.URL).Replace(tt.doc))(w, r)
			}, gatewaytest.WithTLS())
			c := mustAuthZEN(t, pdp.URL, authzen.WithHTTPClient(pdp.Client()))
			c.SetToken(pepToken)
			d := evaluated(t, c, req)
			assert.False(t, d.Allowed())
			assert.ErrorIs(t, d.Cause, authzen.ErrDiscovery)
			assert.Zero(t, elsewhere.Requests(), "the credential went to another origin")
			assert.Equal(t, int64(1), pdp.Requests(), "the discovery request only: no endpoint of a document not trusted is asked")
		})
	}
}
