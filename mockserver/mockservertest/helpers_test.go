package mockservertest_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

const acme = "../../examples/fixtures/acme.json"

// es256Tokens makes a test's server sign access tokens ES256, with the
// P-256 key every realm has from the start, rather than RS256 (the
// default) with a 2048-bit RSA key made on the realm's first token, 70 to
// 110 ms of CPU under -race per server, for the tests about something else.
// TestStart, TestStopRestart (a token outlives a restart) and the examples
// run on the default server, as users' tests do. Each server still makes
// keys of its own: a key shared between servers would make one accept
// another's tokens.
var es256Tokens = mockserver.WithAccessTokenAlgorithm("ES256")

// check asks, with c's token and without the cache, whether bob may read
// orders (he may, as a viewer through the support group).
func check(t *testing.T, c *pep.Client) pep.Decision {
	t.Helper()
	d, err := c.Check(t.Context(), "orders", "read", pep.NoCache())
	require.NoError(t, err, "a gateway that is down or failing is a fail-closed DENY, not an error")
	return d
}

// client is a pep client of gw's orders-api, as bob, with no breaker, so
// that each check reaches the gateway, and with the hang guard
// (hangguard.Timeout) rather than the 2 s production default, which a
// clean call on a loaded machine can overrun; opts come after both, so a
// test about a timeout gives its own, which wins.
func client(t *testing.T, gw *mockservertest.Server, opts ...pep.Option) *pep.Client {
	t.Helper()
	c, err := pep.New(gw.URL, "acme", "orders-api", append([]pep.Option{pep.WithTimeout(hangguard.Timeout), pep.WithBreaker(0, 0)}, opts...)...)
	require.NoError(t, err)
	c.SetToken(gw.Token("acme", "bob"))
	return c
}

// TestStopRestart checks that a stopped server is unreachable (a client
// fails closed with ErrUnavailable) and that a restarted one answers again
// on the same URL, with the same state: the token minted before Stop is
// still good.
func TestStopRestart(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixtureFile(acme))
	c := client(t, gw)
	url := gw.URL
	require.Equal(t, pep.Grant, check(t, c).Status)

	gw.Stop()
	gw.Stop() // a second Stop does nothing
	d := check(t, c)
	require.Equal(t, pep.Deny, d.Status)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	var re *pep.ResponseError
	require.False(t, errors.As(d.Cause, &re), "nothing answered: a transport failure, not a gateway answer")
	_, err := gw.Client().Get(url + "/realms/acme/.well-known/openid-configuration") //nolint:noctx // a refused connection
	require.Error(t, err)

	gw.Restart()
	gw.Restart() // restarting a running server does nothing
	require.Equal(t, url, gw.URL)
	d = check(t, c)
	require.Equal(t, pep.Grant, d.Status)
	require.NoError(t, d.Cause)

	// Stop and Restart again: the cycle can be repeated.
	gw.Stop()
	require.ErrorIs(t, check(t, c).Cause, pep.ErrUnavailable)
	gw.Restart()
	require.Equal(t, pep.Grant, check(t, c).Status)
}

// TestStopEndsRequestsInFlight checks that Stop does not wait for a request
// the server is still working on (held by a minute of injected latency):
// its connection is closed and the client fails closed at once.
func TestStopEndsRequestsInFlight(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixtureFile(acme), es256Tokens)
	gw.SetFaults(mockservertest.Faults{DecisionLatency: time.Minute})
	c := client(t, gw, pep.WithRetry(0, 0, 0), pep.WithTimeout(2*time.Minute))
	wrote := make(chan struct{})
	var once sync.Once
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) },
	})
	done := make(chan pep.Decision)
	go func() {
		d, _ := c.Check(ctx, "orders", "read")
		done <- d
	}()
	<-wrote // the request is on the server's connection
	gw.Stop()
	d := <-done
	require.Equal(t, pep.Deny, d.Status)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
}

// TestPatchConfigAndPutConfig checks the two ways of changing the
// configuration: PATCH changes only the keys it names, PUT resets every key
// it does not name to its default.
func TestPatchConfigAndPutConfig(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t)
	defaults := mockservertest.Config{TokenLifetimeSeconds: 300, MaxPageSize: 100}
	require.Equal(t, defaults, gw.Config())

	got := gw.PatchConfig(map[string]any{"maxPageSize": 10})
	require.Equal(t, mockservertest.Config{TokenLifetimeSeconds: 300, MaxPageSize: 10}, got)
	got = gw.PatchConfig(map[string]any{"tokenLifetimeSeconds": 60, "dpopNonceRequired": true})
	require.Equal(t, mockservertest.Config{TokenLifetimeSeconds: 60, MaxPageSize: 10, DPoPNonceRequired: true}, got,
		"PATCH keeps the keys it does not name")
	require.Equal(t, got, gw.Config())

	got = gw.PutConfig(map[string]any{"decisionLatencyMs": 5})
	require.Equal(t, mockservertest.Config{TokenLifetimeSeconds: 300, MaxPageSize: 100, DecisionLatencyMs: 5}, got,
		"PUT resets the keys it does not name")
	require.Equal(t, defaults, gw.PutConfig(nil))
	require.Equal(t, defaults, gw.Config())
}

// TestConfigRefusalFailsTheTest checks that a configuration the server
// refuses (400) fails the test with the server's reason, and changes
// nothing.
func TestConfigRefusalFailsTheTest(t *testing.T) {
	t.Parallel()
	rec := &fatalRecorder{TB: t}
	gw := mockservertest.Start(rec)
	for name, call := range map[string]func(){
		"unknown key":     func() { gw.PatchConfig(map[string]any{"maxPagesize": 10}) },
		"out of range":    func() { gw.PutConfig(map[string]any{"maxPageSize": 1000}) },
		"rate above one":  func() { gw.SetFaults(mockservertest.Faults{DecisionFailureRate: 1.5}) },
		"negative delay":  func() { gw.SetFaults(mockservertest.Faults{DecisionLatency: -time.Second}) },
		"delay too large": func() { gw.SetFaults(mockservertest.Faults{DecisionLatency: time.Hour}) },
	} {
		t.Run(name, func(t *testing.T) {
			msg := rec.fatal(call)
			require.Contains(t, msg, "/admin/config: 400 Bad Request")
			require.Equal(t, mockservertest.Config{TokenLifetimeSeconds: 300, MaxPageSize: 100}, gw.Config())
		})
	}
}

// TestSetFaults checks that fault injection makes a client fail closed
// with ErrUnavailable and the server's 503, that it leaves the rest of the
// configuration alone, and that the zero Faults turns it off.
func TestSetFaults(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixtureFile(acme), es256Tokens)
	c := client(t, gw, pep.WithRetry(0, 0, 0))
	gw.PatchConfig(map[string]any{"maxPageSize": 7})

	cfg := gw.SetFaults(mockservertest.Faults{DecisionFailureRate: 1, DecisionLatency: 1500 * time.Microsecond})
	require.Equal(t, mockservertest.Config{TokenLifetimeSeconds: 300, MaxPageSize: 7, DecisionLatencyMs: 1, DecisionFailureRate: 1}, cfg,
		"whole milliseconds; the other keys keep their values")
	d := check(t, c)
	require.Equal(t, pep.Deny, d.Status)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	var re *pep.ResponseError
	require.ErrorAs(t, d.Cause, &re)
	require.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
	_, err := c.Organizations(t.Context())
	require.ErrorIs(t, err, pep.ErrUnavailable, "get-organizations fails too")

	cfg = gw.SetFaults(mockservertest.Faults{})
	require.Equal(t, mockservertest.Config{TokenLifetimeSeconds: 300, MaxPageSize: 7}, cfg)
	require.Equal(t, pep.Grant, check(t, c).Status)
}

// fatalRecorder is a testing.TB whose Fatalf ends the helper that called it
// (by a panic that fatal recovers) instead of the test.
type fatalRecorder struct {
	testing.TB
}

type fatalPanic string

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	panic(fatalPanic(fmt.Sprintf(format, args...)))
}

// fatal runs f and returns the message it failed the test with; it fails
// the real test if f did not.
func (r *fatalRecorder) fatal(f func()) (msg string) {
	defer func() {
		p, ok := recover().(fatalPanic)
		if !ok {
			r.TB.Errorf("the helper did not fail the test")
		}
		msg = string(p)
		require.True(r.TB, strings.HasPrefix(msg, "mockservertest: "), msg)
	}()
	f()
	return ""
}
