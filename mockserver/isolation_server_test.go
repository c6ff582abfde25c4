package mockserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// isolationServerEnv, when set, makes the test binary the server of
// BenchmarkRealmIsolation/http-process instead of running tests: TestMain
// hands the process to runIsolationServer.
const isolationServerEnv = "MOCKSERVER_ISOLATION_SERVER"

// isolationServerInfo is what the server process tells the benchmark, in
// one JSON line on its standard output: where it listens and what the
// benchmark's requests need.
type isolationServerInfo struct {
	URL          string
	Admin, Carol string
	Orgs         []string
	TmplID       string
}

// runIsolationServer serves buildIsolationSetup's server on a loopback
// port until its standard input ends (the benchmark closes it, or exits),
// and returns the process's exit code.
func runIsolationServer() int {
	is, err := buildIsolationSetup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolation server:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolation server:", err)
		return 1
	}
	srv := &http.Server{Handler: is.s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	info := isolationServerInfo{URL: "http://" + ln.Addr().String(), Admin: is.admin, Carol: is.carol, Orgs: is.orgs, TmplID: is.tmplID}
	if err := json.NewEncoder(os.Stdout).Encode(info); err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
	return 0
}

// startIsolationServer starts the test binary again as the isolation
// server and returns the benchmark's setup for it, its requests sent over
// loopback connections. The server stops when the benchmark ends.
func startIsolationServer(b *testing.B) *isolationSetup {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), isolationServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin := testkit.Must(cmd.StdinPipe())(b)
	stdout := testkit.Must(cmd.StdoutPipe())(b)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close() // the server's signal to stop
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var info isolationServerInfo
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &info)
	}
	if err != nil {
		b.Fatalf("isolation server: no address: %v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &isolationSetup{
		h:     overHTTP{client: &http.Client{Transport: tr}, base: info.URL},
		admin: info.Admin, carol: info.Carol, orgs: info.Orgs, tmplID: info.TmplID,
	}
}
