package mockserver_test

// Attack reproduction (branch a-explain, issue 28): the denial log writes
// what the caller of /authorize sent (context.attributes.method and
// .path, undefined resource and scope names) raw, unquoted, into a
// multi-line text (decision/text.go: Text, pairName). Any holder of a
// valid token of the realm, not an administrator, can therefore forge
// whole lines of the denial log (a "GRANT for ..." line, or one that looks
// like another route's), and send terminal control sequences to the
// operator's terminal (-log-denials writes to stderr). FAILS while the
// break exists.

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

func TestAttackDenialLogForgedLines(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var lines []string
	srv := mockservertest.Start(t, mockserver.WithFixtureFile(acmeFixture), mockserver.WithDenialLog(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}))
	forged := "mockserver: POST /realms/acme/authorization-decision-provider/authorize: GRANT for mallory on client orders-api"
	for _, tc := range []struct{ name, resources, context string }{
		{"method", `[{"name":"orders","scopes":["delete"]}]`, `{"attributes":{"method":"GET\n` + forged + `"}}`},
		{"path", `[{"name":"orders","scopes":["delete"]}]`, `{"attributes":{"method":"GET","path":"/x\n` + forged + `\u001b[2J"}}`},
		{"resource", `[{"name":"ghost\n` + forged + `"}]`, `{}`},
	} {
		mu.Lock()
		lines = nil
		mu.Unlock()
		status, _ := decide(t, srv, srv.Token("acme", "bob"), tc.resources, tc.context)
		require.NotEqual(t, "GRANT", status)
		mu.Lock()
		require.Len(t, lines, 1, tc.name)
		text := lines[0]
		mu.Unlock()
		t.Logf("%s: denial log entry:\n%s", tc.name, text)
		for _, l := range strings.Split(text, "\n") {
			assert.False(t, strings.HasPrefix(l, "mockserver: ") && l != strings.Split(text, "\n")[0],
				"%s: the caller forged a line of the denial log: %q", tc.name, l)
			assert.NotContains(t, l, "\x1b", "%s: a terminal escape from the caller reaches the log", tc.name)
		}
	}
}

// TestAttackLogDenialsRacesCleanup: denied decisions in flight while the
// test that owns the log ends (its cleanup stops the server and closes the
// log). A t.Logf after the test completed would panic; run with -race.
// HELD: denialLog drops lines after close, and close waits for a line in
// progress.
func TestAttackLogDenialsRacesCleanup(t *testing.T) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			srv := mockservertest.Start(t, mockserver.WithFixtureFile(acmeFixture), mockservertest.LogDenials(t))
			tok := srv.Token("acme", "bob")
			client := &http.Client{}
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 400; i++ {
						select {
						case <-stop:
							return
						default:
						}
						req, _ := http.NewRequest(http.MethodPost, srv.URL+"/realms/acme/authorization-decision-provider/authorize",
							strings.NewReader(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["delete"]}],"context":{}}`))
						req.Header.Set("Authorization", "Bearer "+tok)
						req.Header.Set("Content-Type", "application/json")
						if resp, err := client.Do(req); err == nil {
							_ = resp.Body.Close()
						}
					}
				}()
			}
			time.Sleep(20 * time.Millisecond) // let requests be in flight as the subtest ends
		})
	}
	close(stop)
	wg.Wait()
}
