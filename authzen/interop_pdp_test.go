//go:build interop

// The Todo scenario against real PDPs, started here: built only with
// -tags interop, which scripts/authzen-interop.sh passes with the PDPs'
// binaries (it fetches them from their registries), so that the default
// test run neither needs them nor skips anything.

package authzen_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
)

// pdpBinary returns the binary that the environment variable env names,
// failing the test when it names none.
func pdpBinary(t *testing.T, env string) string {
	t.Helper()
	bin := os.Getenv(env)
	require.NotEmpty(t, bin, "%s names the PDP's binary: run scripts/authzen-interop.sh", env)
	return bin
}

// TestTodoInteropOpenFGA runs the scenario against a real OpenFGA
// (AUTHZEN_OPENFGA_BIN), which runs without authentication: the client is
// made WithoutCredentials.
func TestTodoInteropOpenFGA(t *testing.T) {
	bin := pdpBinary(t, "AUTHZEN_OPENFGA_BIN")
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	base := "http://" + httpAddr
	start(t, exec.Command(bin, "run", "--datastore-engine=memory", "--experimentals=authzen",
		"--http-addr="+httpAddr, "--grpc-addr="+grpcAddr, "--authzen-base-url="+base,
		"--playground-enabled=false", "--metrics-enabled=false", "--log-level=warn"))
	waitHealthy(t, base+"/healthz")

	var store struct{ ID string }
	post(t, base+"/stores", `{"name":"authzen-todo"}`, &store)
	model := testkit.Must(os.ReadFile("testdata/todo/model.json"))(t)
	post(t, base+"/stores/"+store.ID+"/authorization-models", string(model), nil)
	tuples := testkit.Must(os.ReadFile("testdata/todo/tuples.json"))(t)
	post(t, base+"/stores/"+store.ID+"/write", `{"writes":`+string(tuples)+`}`, nil)

	prefix := "/stores/" + store.ID + "/access/v1/"
	c := testkit.Must(hangguard.NewAuthZEN(base, authzen.WithEndpoints(authzen.Endpoints{
		Evaluation: prefix + "evaluation", Evaluations: prefix + "evaluations",
	}), authzen.WithTimeout(10*time.Second), authzen.WithoutCredentials()))(t)
	t.Cleanup(func() { _ = c.Close() })
	rows, ok := runTodoScenario(t, c, nil)
	printTable(t, "OpenFGA", rows)
	require.True(t, ok, "every decision matches, or the PDP refused it and the client denied")
}

// TestTodoInteropCerbos runs the scenario against a real Cerbos
// (AUTHZEN_CERBOS_BIN) with the policies of testdata/todo/cerbos, its
// endpoints discovered from its /.well-known/authzen-configuration. Cerbos
// is stateless and takes no credential: the client is made
// WithoutCredentials, and the PEP sends each subject's roles and e-mail as
// its properties (what its token would say), from the scenario's users in
// testdata/todo/orgauthz-fixture.json.
func TestTodoInteropCerbos(t *testing.T) {
	bin := pdpBinary(t, "AUTHZEN_CERBOS_BIN")
	policies := testkit.Must(filepath.Abs("testdata/todo/cerbos"))(t)
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	conf := filepath.Join(t.TempDir(), "cerbos.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(`server:
  httpListenAddr: "`+httpAddr+`"
  grpcListenAddr: "`+grpcAddr+`"
storage:
  driver: disk
  disk:
    directory: "`+policies+`"
    watchForChanges: false
telemetry:
  disabled: true
`), 0o600))
	cmd := exec.Command(bin, "server", "--config="+conf, "--log-level=warn")
	cmd.Env = append(os.Environ(), "CERBOS_NO_TELEMETRY=1")
	start(t, cmd)
	base := "http://" + httpAddr
	waitHealthy(t, base+"/_cerbos/health")

	c := mustAuthZEN(t, base, authzen.WithTimeout(10*time.Second), authzen.WithoutCredentials())
	require.NoError(t, c.Discover(t.Context()))
	rows, ok := runTodoScenario(t, c, todoSubjects(t))
	printTable(t, "Cerbos", rows)
	require.True(t, ok, "every decision matches, or the PDP refused it and the client denied")
}

// todoSubjects returns what adds each scenario subject's roles and e-mail
// to its properties, from the reference server's fixture of the scenario.
func todoSubjects(t *testing.T) func(authzen.Request) authzen.Request {
	t.Helper()
	data := testkit.Must(os.ReadFile("testdata/todo/orgauthz-fixture.json"))(t)
	var fx struct {
		Realms []struct {
			Users []struct {
				Username, Email string
				Roles           []string
			}
		}
	}
	require.NoError(t, json.Unmarshal(data, &fx))
	props := map[string]map[string]any{}
	for _, u := range fx.Realms[0].Users {
		props[u.Username] = map[string]any{"roles": u.Roles, "email": u.Email}
	}
	return func(r authzen.Request) authzen.Request {
		if p, ok := props[r.Subject.ID]; ok {
			r.Subject.Properties = p
		}
		return r
	}
}

// printTable logs the table of pdp's run, headed by its name.
func printTable(t *testing.T, pdp string, rows []row) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n\n| decision | expected | got | result |\n|---|---|---|---|\n", pdp)
	counts := map[string]int{}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, r.expected, r.got, r.verdict)
		counts[r.verdict]++
	}
	fmt.Fprintf(&b, "\n%s: %d rows: %d PASS, %d PDP REFUSED, DENIED, %d FAIL\n", pdp, len(rows), counts["PASS"], counts["PDP REFUSED, DENIED"], counts["FAIL"])
	t.Log(b.String())
}

// start starts cmd, its output on the test's stderr, and kills it when the
// test ends.
func start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
	defer l.Close()
	return l.Addr().String()
}

// waitHealthy polls a PDP's health check until it answers 200, for at
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
			t.Fatalf("the PDP did not become healthy (%s) within a minute", url)
		case <-tick.C:
		}
	}
}

func post(t *testing.T, url, body string, out any) {
	t.Helper()
	resp := testkit.Must(http.Post(url, "application/json", bytes.NewBufferString(body)))(t)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	require.Less(t, resp.StatusCode, 300, "%s: %s", url, buf.String())
	if out != nil {
		require.NoError(t, json.Unmarshal(buf.Bytes(), out))
	}
}
