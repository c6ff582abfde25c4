package authzen_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// The AuthZEN working group's Todo scenario (testdata/todo/SOURCE.md),
// run through the client against a real PDP.

type scenario struct {
	Evaluation []struct {
		Request  wireReq `json:"request"`
		Expected bool    `json:"expected"`
	} `json:"evaluation"`
	Evaluations []struct {
		Request struct {
			wireReq
			Evaluations []wireReq `json:"evaluations"`
		} `json:"request"`
		Expected []struct {
			Decision bool `json:"decision"`
		} `json:"expected"`
	} `json:"evaluations"`
}

type wireEnt struct {
	Type       string         `json:"type"`
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Properties map[string]any `json:"properties"`
}

type wireReq struct {
	Subject  *wireEnt       `json:"subject"`
	Action   *wireEnt       `json:"action"`
	Resource *wireEnt       `json:"resource"`
	Context  map[string]any `json:"context"`
}

func (w wireReq) request() authzen.Request {
	var r authzen.Request
	if w.Subject != nil {
		r.Subject = authzen.Subject{Type: w.Subject.Type, ID: w.Subject.ID, Properties: w.Subject.Properties}
	}
	if w.Action != nil {
		r.Action = authzen.Action{Name: w.Action.Name, Properties: w.Action.Properties}
	}
	if w.Resource != nil {
		r.Resource = authzen.Resource{Type: w.Resource.Type, ID: w.Resource.ID, Properties: w.Resource.Properties}
	}
	r.Context = w.Context
	return r
}

// row is one line of the interop table.
type row struct{ name, expected, got, verdict string }

// runTodoScenario sends every decision of the scenario through c, each
// request passed through enrich first when it is not nil (what a PEP adds
// for a stateless PDP), and returns the table and whether every row
// passed: a decision that matches, or a PDP refusal (4xx) that the client
// turned into a denial with a Cause.
func runTodoScenario(t *testing.T, c *authzen.Client, enrich func(authzen.Request) authzen.Request) ([]row, bool) {
	t.Helper()
	data := testkit.Must(os.ReadFile("testdata/todo/decisions-authorization-api-1_0-02.json"))(t)
	var sc scenario
	require.NoError(t, json.Unmarshal(data, &sc))
	var rows []row
	ok := true
	verdict := func(d authzen.Decision, want bool) (string, string) {
		var re *authzen.ResponseError
		switch {
		case d.Allowed() == want && d.Cause == nil:
			return fmt.Sprint(d.Allowed()), "PASS"
		case !d.Allowed() && errors.As(d.Cause, &re) && re.StatusCode >= 400 && re.StatusCode < 500:
			return fmt.Sprintf("DENY (cause: PDP answered %d)", re.StatusCode), "PDP REFUSED, DENIED"
		}
		ok = false
		return fmt.Sprintf("%v (cause: %v)", d.Allowed(), d.Cause), "FAIL"
	}
	if enrich == nil {
		enrich = func(r authzen.Request) authzen.Request { return r }
	}
	for i, e := range sc.Evaluation {
		r := enrich(e.Request.request())
		d := evaluated(t, c, r, authzen.NoCache())
		got, v := verdict(d, e.Expected)
		rows = append(rows, row{fmt.Sprintf("evaluation %2d: %s %s %s:%s", i+1, short(r.Subject.ID), r.Action.Name, r.Resource.Type, r.Resource.ID), fmt.Sprint(e.Expected), got, v})
	}
	for i, b := range sc.Evaluations {
		items := make([]authzen.Request, len(b.Request.Evaluations))
		for k, w := range b.Request.Evaluations {
			items[k] = w.request()
			if items[k].Subject.ID != "" {
				items[k] = enrich(items[k])
			}
		}
		defaults := enrich(b.Request.request())
		for _, s := range []authzen.Semantic{authzen.ExecuteAll, authzen.DenyOnFirstDeny, authzen.PermitOnFirstPermit} {
			ds := evaluatedAll(t, c, defaults, items, authzen.WithSemantic(s), authzen.NoCache())
			stopped := false
			for k, d := range ds {
				want := b.Expected[k].Decision
				name := fmt.Sprintf("batch %d item %d (%s)", i+1, k+1, s)
				if stopped {
					v := "PASS"
					if !errors.Is(d.Cause, authzen.ErrNotEvaluated) && d.Allowed() != want {
						v, ok = "FAIL", false
					}
					rows = append(rows, row{name, "not evaluated or " + fmt.Sprint(want), fmt.Sprintf("%v (cause: %v)", d.Allowed(), d.Cause), v})
					continue
				}
				got, v := verdict(d, want)
				rows = append(rows, row{name, fmt.Sprint(want), got, v})
				stopped = s == authzen.DenyOnFirstDeny && !want || s == authzen.PermitOnFirstPermit && want
			}
		}
	}
	return rows, ok
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

// TestTodoReferenceServer runs the whole scenario against the reference
// server's AuthZEN endpoints (testdata/todo/orgauthz-fixture.json models
// it), discovered from its metadata, as Bearer and as DPoP: every decision
// must match, with no refusal tolerated.
func TestTodoReferenceServer(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"))
	signer := testkit.Must(dpop.GenerateKey())(t)
	for _, tc := range []struct {
		name string
		set  func(c *authzen.Client)
	}{
		{"Bearer", func(c *authzen.Client) { c.SetToken(srv.Token("todo", "service-account-todo-api")) }},
		{"DPoP", func(c *authzen.Client) {
			c.SetDPoPToken(srv.Token("todo", "service-account-todo-api", mockserver.TokenDPoPBinding(signer.Thumbprint())), signer)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustAuthZEN(t, srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()))
			tc.set(c)
			require.NoError(t, c.Discover(t.Context()))
			rows, _ := runTodoScenario(t, c, nil)
			for _, r := range rows {
				require.Equal(t, "PASS", r.verdict, "%s: expected %s, got %s", r.name, r.expected, r.got)
			}
			require.Len(t, rows, 40+3*3*2)
		})
	}
}
