package mockserver

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/orgauthz/orgauthz/internal/leakcheck"
	"github.com/orgauthz/orgauthz/mockserver/internal/openapitest"
)

// traffic checks the exchanges of every server the tests build; fuzz
// targets ask it after each input, so that a mismatch is a fuzz failure.
// It is nil, and checks nothing, when benchmarks run.
var traffic *openapitest.Checker

// TestMain checks every exchange of every server the package's tests build
// against the OpenAPI document (openapi.json), then that no test leaked a
// goroutine. An exchange the document does not describe fails the run,
// with the exchange printed. Benchmarks run without the check, which would
// be most of what they measure, and without even loading the document,
// whose few megabytes of live heap would change the garbage collector's
// pace in every benchmark. It is the package's only TestMain; it also
// starts the server process of BenchmarkRealmIsolation/http-process.
func TestMain(m *testing.M) {
	if os.Getenv(isolationServerEnv) != "" {
		os.Exit(runIsolationServer())
	}
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		chk, err := openapitest.New(openAPIDocument)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		chk.HostRefused = refusedHost
		traffic, wrapHandler = chk, chk.Middleware
	}
	code := m.Run()
	if traffic != nil && testing.Verbose() {
		fmt.Fprintln(os.Stderr, "openapitest: exchanges checked:", traffic.Checked())
	}
	if code == 0 {
		if err := traffic.Err(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		if err := leakcheck.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
