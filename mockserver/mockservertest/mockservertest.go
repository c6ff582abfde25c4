// Package mockservertest runs the reference server (package mockserver) on a
// loopback port for the length of a test, with helpers that mint tokens for
// it, change its platform configuration (fault injection included) and make
// it unreachable and reachable again on the same URL.
//
// Everything a helper does goes through the server's own HTTP API, with a
// platform administrator's token, so a test sees the server as a client
// would: PatchConfig is PATCH /admin/config, PutConfig is PUT /admin/config,
// SetFaults is a PATCH of the fault-injection keys. Explain is the one
// exception: it asks the server in process (mockserver's ExplainDecision,
// what the policy evaluation route answers), because that route needs a
// realm administrator's token and a fixture need not have one.
//
// Why was a call denied? LogDenials, an option of Start, writes the
// explanation of every DENY and ERROR the server decides to the test's
// log; Explain returns it for any user and pair.
//
// The package Example is a consumer's test to copy: a fixture, a user who
// may and one who may not, a DPoP-bound token (mockserver.TokenDPoPBinding),
// and the gateway down. In a test of what your service does during an
// outage, turn the client's cache off (pep.WithCache(0, 0, 0)) or skip it
// per call (pep.NoCache()): with the default cache, a GRANT the gateway
// gave in the last 30 s is still answered while it is down, so "gateway
// down, my service answers 503" would get a 200. Close the client in the
// test's cleanup (pep.Client.Close), so that goleak finds none of its
// connections.
package mockservertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/mockserver"
)

// Server is a running reference server. It embeds the *mockserver.Server,
// so IssueToken and AdminSecret are at hand; URL is its base URL (also the
// issuer base of its tokens). It is closed by the test's cleanup.
//
// Its methods are safe for concurrent use, but those that fail the test
// (Token, AdminToken, Config, PatchConfig, PutConfig, SetFaults, Restart)
// must be called from the goroutine running the test, as t.Fatalf must.
type Server struct {
	*mockserver.Server
	// URL is the base URL, e.g. http://127.0.0.1:41234, without a trailing slash.
	URL string

	t      testing.TB
	addr   string          // the address URL names, kept across Stop and Restart
	client *http.Client    // keep-alive on loopback; its idle connections go with the server
	tr     *http.Transport // client's transport

	mu     sync.Mutex
	hs     *http.Server  // nil while stopped
	served chan struct{} // closed when hs.Serve has returned
}

// Start starts a reference server configured by opts on a loopback port and
// closes it when the test ends. WithIssuer is set to the server's URL (an
// option in opts cannot override it, since the tokens must name the server
// that checks them). A configuration error fails the test at once.
func Start(t testing.TB, opts ...mockserver.Option) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mockservertest: listen: %v", err)
	}
	url := "http://" + ln.Addr().String()
	srv, err := mockserver.New(append(append([]mockserver.Option(nil), opts...), mockserver.WithIssuer(url))...)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("mockservertest: %v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // loopback: never through a proxy from the environment
	s := &Server{Server: srv, URL: url, t: t, addr: ln.Addr().String(), tr: tr, client: &http.Client{Transport: tr}}
	s.serve(ln)
	t.Cleanup(func() {
		s.Stop()
		tr.CloseIdleConnections()
	})
	return s
}

// serve serves on ln until Stop.
func (s *Server) serve(ln net.Listener) {
	hs := &http.Server{Handler: s.Server, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	s.mu.Lock()
	s.hs, s.served = hs, served
	s.mu.Unlock()
	go func() {
		defer close(served)
		_ = hs.Serve(ln) // returns http.ErrServerClosed on Stop
	}()
}

// Client returns an *http.Client for the server (keep-alive on loopback).
// Its idle connections are closed with the server.
func (s *Server) Client() *http.Client { return s.client }

// Stop makes the server unreachable, as a gateway that went down: it
// closes the listener, so that new connections are refused, and every open
// connection, so that requests in flight fail. The server's state (realms,
// configuration, tokens) is kept for Restart. Stop returns once the server
// has stopped serving; stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	hs, served := s.hs, s.served
	s.hs = nil
	s.mu.Unlock()
	if hs == nil {
		return
	}
	_ = hs.Close()
	<-served
	s.tr.CloseIdleConnections()
}

// Restart makes a stopped server reachable again on the same URL, with the
// state it had, so tokens minted before Stop are still good. The port was
// free a moment ago, but another process may take it meanwhile: Restart
// tries to listen on it for about a second before it fails the test.
// Restarting a running server does nothing.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	running := s.hs != nil
	s.mu.Unlock()
	if running {
		return
	}
	ln, err := listenAgain(s.addr)
	if err != nil {
		s.t.Fatalf("mockservertest: restart on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// Restart's bounded retries: attempts, and the pause between two.
const (
	restartAttempts = 50
	restartPause    = 20 * time.Millisecond
)

// listenAgain listens on addr, retrying a bounded number of times while the
// address is in use.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range restartAttempts {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(restartPause) // a back-off between attempts, not a synchronisation
	}
	return nil, err
}

// Token mints an access token of realm for username (see
// mockserver.Server.IssueToken) and fails the test on error.
func (s *Server) Token(realm, username string, opts ...mockserver.TokenOption) string {
	s.t.Helper()
	tok, err := s.IssueToken(realm, username, opts...)
	if err != nil {
		s.t.Fatalf("mockservertest: token for %s/%s: %v", realm, username, err)
	}
	return tok
}

// Revoke revokes token at realm's revocation endpoint (RFC 7009, POST
// /realms/{realm}/protocol/openid-connect/revoke), authenticated as the
// client the token was issued to: clientID with its secret ("" for a
// public client). From then on every route of the server refuses the
// token. Any answer but 200 fails t, which may be a subtest's (the test
// running on the calling goroutine); the request ends with t's context.
func (s *Server) Revoke(t testing.TB, realm, clientID, secret, token string) {
	t.Helper()
	form := url.Values{"client_id": {clientID}, "client_secret": {secret}, "token": {token}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		s.URL+"/realms/"+url.PathEscape(realm)+"/protocol/openid-connect/revoke", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatalf("mockservertest: revoke: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("mockservertest: revoke: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mockservertest: revoke: %s", resp.Status)
	}
}

// AdminToken mints a master realm token of the bootstrap platform
// administration client's service account, which holds platform-admin.
func (s *Server) AdminToken() string {
	s.t.Helper()
	return s.Token("master", "service-account-platform-admin")
}

// Config is the reference server's platform configuration, as
// GET, PUT and PATCH /admin/config answer it.
type Config struct {
	// TokenLifetimeSeconds is the lifetime of the tokens the server issues
	// from then on (1 to 86400; default 300).
	TokenLifetimeSeconds int `json:"tokenLifetimeSeconds"`
	// MaxPageSize is the largest page a list returns (1 to 100; default
	// 100).
	MaxPageSize int `json:"maxPageSize"`
	// DPoPNonceRequired makes every DPoP proof carry a nonce the server
	// gave (default false).
	DPoPNonceRequired bool `json:"dpopNonceRequired"`
	// DecisionLatencyMs delays every decision call by that many
	// milliseconds (0 to 60000; default 0).
	DecisionLatencyMs int `json:"decisionLatencyMs"`
	// DecisionFailureRate is the share of decision calls, 0 to 1, that
	// answer 503 (default 0).
	DecisionFailureRate float64 `json:"decisionFailureRate"`
}

// Config returns the server's current platform configuration (GET
// /admin/config) and fails the test on error.
func (s *Server) Config() Config {
	s.t.Helper()
	return s.config(http.MethodGet, nil)
}

// PatchConfig changes the configuration keys that keys names (PATCH
// /admin/config, a partial update) and leaves the others as they are; it
// returns the new configuration. Keys are the JSON names of Config's
// fields, e.g. {"decisionFailureRate": 1}. An unknown key or a value out
// of range is refused by the server with a 400, which changes nothing and
// fails the test.
func (s *Server) PatchConfig(keys map[string]any) Config {
	s.t.Helper()
	return s.config(http.MethodPatch, keys)
}

// PutConfig replaces the configuration (PUT /admin/config): the keys that
// keys names take its values, and every key it does not name goes back to
// its default, so PutConfig(nil) restores the defaults. It returns the new
// configuration and fails the test as PatchConfig does.
func (s *Server) PutConfig(keys map[string]any) Config {
	s.t.Helper()
	if keys == nil {
		keys = map[string]any{}
	}
	return s.config(http.MethodPut, keys)
}

// Faults are the reference server's fault injection for the calls of the
// authorization decision provider (POST
// /realms/{realm}/authorization-decision-provider/authorize and
// .../get-organizations), applied after the request was read and checked:
// what a test sets to watch a client fail closed. The zero value injects
// nothing.
type Faults struct {
	// DecisionLatency delays every decision call, in whole milliseconds
	// (up to a minute). The delay ends early when the caller hangs up.
	DecisionLatency time.Duration
	// DecisionFailureRate is the share of decision calls, 0 to 1, that
	// answer 503 Service Unavailable; 1 makes every call fail.
	DecisionFailureRate float64
}

// SetFaults sets the server's fault injection to f, through PATCH
// /admin/config, and leaves the rest of the configuration as it is.
// SetFaults(Faults{}) turns fault injection off. It returns the new
// configuration and fails the test when the server refuses f (a rate
// outside 0 to 1, a latency outside 0 to 60 s).
func (s *Server) SetFaults(f Faults) Config {
	s.t.Helper()
	return s.config(http.MethodPatch, map[string]any{
		"decisionLatencyMs":   f.DecisionLatency.Milliseconds(),
		"decisionFailureRate": f.DecisionFailureRate,
	})
}

// config sends method to /admin/config with body (none when nil) and
// returns the configuration the server answered.
func (s *Server) config(method string, body map[string]any) Config {
	s.t.Helper()
	cfg, err := s.configCall(method, body)
	if err != nil {
		s.t.Fatalf("mockservertest: %s /admin/config: %v", method, err)
	}
	return cfg
}

func (s *Server) configCall(method string, body map[string]any) (Config, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Config{}, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+"/admin/config", r)
	if err != nil {
		return Config{}, err
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return Config{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Config{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Config{}, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var out struct {
		Result Config `json:"result"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return Config{}, fmt.Errorf("the answer is not a configuration: %w", err)
	}
	return out.Result, nil
}

// ExplainOption sets the context of a decision Explain explains.
type ExplainOption func(*mockserver.DecisionQuery)

// ExplainClient names the client (its clientId). Without it, Explain
// explains the decision of every client of the realm that defines the
// resource.
func ExplainClient(clientID string) ExplainOption {
	return func(q *mockserver.DecisionQuery) { q.Client = clientID }
}

// ExplainMethod sets the request's method (/authorize's
// context.attributes.method), which a permission with methods needs.
func ExplainMethod(method string) ExplainOption {
	return func(q *mockserver.DecisionQuery) { q.Method = method }
}

// ExplainPath sets the request's path (context.attributes.path); the
// explanation shows it, no permission reads it.
func ExplainPath(path string) ExplainOption {
	return func(q *mockserver.DecisionQuery) { q.Path = path }
}

// ExplainOrganization decides as for a token with that organization claim
// (an organization's id or alias, as mockserver.TokenOrganization): only
// the user's assignments there count.
func ExplainOrganization(org string) ExplainOption {
	return func(q *mockserver.DecisionQuery) { q.Organization = org }
}

// Explain says, as text for the test's reader, how the server decides
// whether username of realm may use scope of resource (an empty scope:
// every scope of it): the status, the reason for each pair, every
// permission that applies to a pair that is not GRANT with the facts it
// matched or missed (roles, groups, users, method limit, ownership rule),
// and the user's roles, each with where it comes from (realm role, group,
// organization role through a department, department template). opts set
// the client and the request context; without ExplainMethod the request
// has no method. It is the explanation of the policy evaluation route,
// from the code that decides /authorize. An unknown realm, user, client
// or resource fails the test; call it from the test's goroutine.
func (s *Server) Explain(realm, username, resource, scope string, opts ...ExplainOption) string {
	s.t.Helper()
	q := mockserver.DecisionQuery{User: username, Resource: resource}
	if scope != "" {
		q.Scopes = []string{scope}
	}
	for _, o := range opts {
		if o != nil {
			o(&q)
		}
	}
	text, err := s.ExplainDecision(realm, q)
	if err != nil {
		s.t.Fatalf("mockservertest: Explain: %v", err)
	}
	return text
}

// LogDenials is an option for Start that writes to t's log the
// explanation of every decision of /authorize that is DENY or ERROR, and
// of every AuthZEN evaluation that is false (see mockserver.WithDenialLog
// and Explain), so that a test that fails on an unexpected denial shows
// why:
//
//	gw := mockservertest.Start(t, mockserver.WithFixtureFile("acme.json"), mockservertest.LogDenials(t))
//
// A decision made after the test's cleanup began (a request still in
// flight as the server stops) is not logged: t's log is closed by then.
func LogDenials(t testing.TB) mockserver.Option {
	l := &denialLog{t: t}
	t.Cleanup(l.close)
	return mockserver.WithDenialLog(l.logf)
}

// denialLog passes lines to t.Logf until the test's cleanup.
type denialLog struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (l *denialLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Logf(format, args...)
	}
}

func (l *denialLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}
