package authzen_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/dpop"
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

// runTodoScenario sends every decision of the scenario through c and
// returns the table and whether every row passed: a decision that matches,
// or a PDP refusal (4xx) that the client turned into a denial with a Cause.
func runTodoScenario(t *testing.T, c *authzen.Client) ([]row, bool) {
	t.Helper()
	data, err := os.ReadFile("testdata/todo/decisions-authorization-api-1_0-02.json")
	require.NoError(t, err)
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
	for i, e := range sc.Evaluation {
		r := e.Request.request()
		d, err := c.Evaluate(t.Context(), r, authzen.NoCache())
		require.NoError(t, err)
		got, v := verdict(d, e.Expected)
		rows = append(rows, row{fmt.Sprintf("evaluation %2d: %s %s %s:%s", i+1, short(r.Subject.ID), r.Action.Name, r.Resource.Type, r.Resource.ID), fmt.Sprint(e.Expected), got, v})
	}
	for i, b := range sc.Evaluations {
		items := make([]authzen.Request, len(b.Request.Evaluations))
		for k, w := range b.Request.Evaluations {
			items[k] = w.request()
		}
		for _, s := range []authzen.Semantic{authzen.ExecuteAll, authzen.DenyOnFirstDeny, authzen.PermitOnFirstPermit} {
			ds, err := c.Evaluations(t.Context(), b.Request.request(), items, authzen.WithSemantic(s), authzen.NoCache())
			require.NoError(t, err)
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

func printTable(t *testing.T, rows []row) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| decision | expected | got | result |\n|---|---|---|---|\n")
	counts := map[string]int{}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, r.expected, r.got, r.verdict)
		counts[r.verdict]++
	}
	fmt.Fprintf(&b, "\n%d rows: %d PASS, %d PDP REFUSED, DENIED, %d FAIL\n", len(rows), counts["PASS"], counts["PDP REFUSED, DENIED"], counts["FAIL"])
	t.Log(b.String())
}

// TestTodoReferenceServer runs the whole scenario against the reference
// server's AuthZEN endpoints (testdata/todo/orgauthz-fixture.json models
// it), discovered from its metadata, as Bearer and as DPoP: every decision
// must match, with no refusal tolerated.
func TestTodoReferenceServer(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"))
	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
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
			c, err := authzen.New(srv.URL+"/realms/todo", authzen.WithHTTPClient(srv.Client()))
			require.NoError(t, err)
			tc.set(c)
			require.NoError(t, c.Discover(t.Context()))
			rows, _ := runTodoScenario(t, c)
			for _, r := range rows {
				require.Equal(t, "PASS", r.verdict, "%s: expected %s, got %s", r.name, r.expected, r.got)
			}
			require.Len(t, rows, 40+3*3*2)
		})
	}
}

// TestTodoInteropOpenFGA runs the scenario against a real OpenFGA, started
// here, when AUTHZEN_OPENFGA_BIN names its binary
// (scripts/authzen-interop.sh builds it and sets it).
func TestTodoInteropOpenFGA(t *testing.T) {
	bin := os.Getenv("AUTHZEN_OPENFGA_BIN")
	if bin == "" {
		t.Skip("AUTHZEN_OPENFGA_BIN is not set; scripts/authzen-interop.sh runs this test against OpenFGA")
	}
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	base := "http://" + httpAddr
	cmd := exec.Command(bin, "run", "--datastore-engine=memory", "--experimentals=authzen",
		"--http-addr="+httpAddr, "--grpc-addr="+grpcAddr, "--authzen-base-url="+base,
		"--playground-enabled=false", "--metrics-enabled=false", "--log-level=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitHealthy(t, base+"/healthz")

	var store struct{ ID string }
	post(t, base+"/stores", `{"name":"authzen-todo"}`, &store)
	model, err := os.ReadFile("testdata/todo/model.json")
	require.NoError(t, err)
	post(t, base+"/stores/"+store.ID+"/authorization-models", string(model), nil)
	tuples, err := os.ReadFile("testdata/todo/tuples.json")
	require.NoError(t, err)
	post(t, base+"/stores/"+store.ID+"/write", `{"writes":`+string(tuples)+`}`, nil)

	prefix := "/stores/" + store.ID + "/access/v1/"
	c, err := authzen.New(base, authzen.WithEndpoints(authzen.Endpoints{
		Evaluation: prefix + "evaluation", Evaluations: prefix + "evaluations",
	}), authzen.WithTimeout(10*time.Second))
	require.NoError(t, err)
	c.SetToken("openfga-runs-without-authentication")
	rows, ok := runTodoScenario(t, c)
	printTable(t, rows)
	require.True(t, ok, "every decision matches, or the PDP refused it and the client denied")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// waitHealthy polls OpenFGA's health check until it answers 200, for at
// most a minute: the process gives no other sign that it is ready.
func waitHealthy(t *testing.T, url string) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-deadline:
			t.Fatal("OpenFGA did not become healthy within a minute")
		case <-tick.C:
		}
	}
}

func post(t *testing.T, url, body string, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	require.Less(t, resp.StatusCode, 300, "%s: %s", url, buf.String())
	if out != nil {
		require.NoError(t, json.Unmarshal(buf.Bytes(), out))
	}
}
