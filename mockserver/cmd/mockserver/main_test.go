package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/leakcheck"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/internal/openapitest"
)

// checker checks the tests' HTTP exchanges with the binary against its
// OpenAPI document; client sends them through it.
var (
	checker *openapitest.Checker
	client  *http.Client
)

// TestMain fails the run when an exchange does not match the document or a
// goroutine leaked.
func TestMain(m *testing.M) {
	c, err := openapitest.New(mockserver.OpenAPI())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	checker, client = c, &http.Client{Transport: c.Transport(nil)}
	code := m.Run()
	if code == 0 {
		if err := checker.Err(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	client.CloseIdleConnections()
	if code == 0 {
		if err := leakcheck.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// start runs the binary's run on a free port and returns its base URL and a
// function that stops it and returns run's error.
//
// The tests that mint tokens for something other than the token itself
// give -access-token-alg ES256: the realm signs with the P-256 key it has
// from the start, rather than RS256 (the default) with a 2048-bit RSA key
// made on its first token, 70 to 110 ms of CPU under -race per server.
// TestRunWithAcmeFixture and TestRunReplicasShareKeys run on the default,
// as users do.
func start(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "the binary prints its base URL")
	base := strings.TrimPrefix(sc.Text(), "mockserver listening on ")
	go func() {
		for sc.Scan() { // drain the rest of the output
		}
	}()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("run did not return after cancellation")
			return nil
		}
	}
	return base, stop
}

func get(t *testing.T, u string) *http.Response {
	t.Helper()
	return send(t, http.MethodGet, u, "", "", nil)
}

// send sends method u with body, of Content-Type ctype unless it is empty,
// and the headers of h. The answer's body is read whole and its
// connection given back before send returns, so that it holds no slot of
// the server's connection limit.
func send(t *testing.T, method, u, ctype, body string, h http.Header) *http.Response {
	t.Helper()
	req := testkit.Must(http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body)))(t)
	maps.Copy(req.Header, h)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp := testkit.Must(client.Do(req))(t)
	defer resp.Body.Close()
	b := testkit.Must(io.ReadAll(resp.Body))(t)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// TestRunWithAcmeFixture: the binary serves the fixture on 127.0.0.1,
// with the issuer of its own address, the platform admin's secret of
// -admin-secret (over the fixture's), until it is stopped. Access tokens
// are RS256 by default, as Keycloak's are, and ES256 with
// -access-token-alg ES256; discovery lists the algorithms the server signs
// with. (It holds TestRunAccessTokenAlgorithm's rows.)
func TestRunWithAcmeFixture(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantAlgs []any
	}{
		{[]string{"-admin-secret", "s3cret"}, []any{"RS256"}},
		{[]string{"-access-token-alg", "ES256"}, []any{"RS256", "ES256"}},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			base, stop := start(t, append([]string{"-fixture", "../../../examples/fixtures/acme.json"}, tc.args...)...)
			require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)
			resp := get(t, base+"/realms/acme/.well-known/openid-configuration")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var doc map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
			require.Equal(t, base+"/realms/acme", doc["issuer"])
			require.Equal(t, tc.wantAlgs, doc["id_token_signing_alg_values_supported"])
			if tc.args[0] == "-admin-secret" {
				adminToken(t, base, "s3cret") // -admin-secret overrides the fixture's secret
			}
			require.NoError(t, stop())
			_, err := http.Get(base + "/realms/acme/.well-known/openid-configuration") //nolint:noctx // the server is gone
			require.Error(t, err)
		})
	}
}

// TestRunCORSOrigin: a browser application at an origin given with
// -cors-origin (repeatable, comma-separated) gets its preflight answered
// and reads the answers, in every realm; another origin does not. The
// binary used to answer every preflight 405.
func TestRunCORSOrigin(t *testing.T) {
	base, stop := start(t, "-fixture", "../../../examples/fixtures/acme.json",
		"-cors-origin", "http://localhost:5173, http://localhost:3000", "-cors-origin", "https://app.example")
	for _, origin := range []string{"http://localhost:5173", "http://localhost:3000", "https://app.example", "https://evil.example"} {
		for _, path := range []string{"/realms/acme/protocol/openid-connect/token", "/realms/acme/authorization-decision-provider/authorize", "/admin/tenants"} {
			resp := send(t, http.MethodOptions, base+path, "", "", http.Header{"Origin": {origin},
				"Access-Control-Request-Method": {http.MethodPost}, "Access-Control-Request-Headers": {"authorization, content-type, dpop"}})
			if origin == "https://evil.example" {
				require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
				require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), path)
				continue
			}
			require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s %s", origin, path)
			require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
			require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), http.MethodPost)
			require.Equal(t, "Authorization, Content-Type, DPoP", resp.Header.Get("Access-Control-Allow-Headers"))
		}
		resp := send(t, http.MethodGet, base+"/realms/acme/.well-known/openid-configuration", "", "", http.Header{"Origin": {origin}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if origin == "https://evil.example" {
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		} else {
			require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	require.NoError(t, stop())
}

func TestRunPrintsGeneratedSecret(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out strings.Builder
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, pw, io.Discard); pw.Close() }()
	sc := bufio.NewScanner(pr)
	for range 2 {
		require.True(t, sc.Scan())
		out.WriteString(sc.Text() + "\n")
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NoError(t, <-done)
	require.Regexp(t, `platform-admin client secret \(master realm\): \S{20,}`, out.String())
}

// TestRunHelp checks that -h describes the command and shows an example
// invocation before the flags, on standard output, and exits 0.
func TestRunHelp(t *testing.T) {
	var out, errOut strings.Builder
	err := run(t.Context(), []string{"-h"}, &out, &errOut)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Zero(t, report(err, &errOut))
	require.Empty(t, errOut.String())
	help := out.String()
	require.True(t, strings.HasPrefix(help, "mockserver runs the reference server"), help)
	example := strings.Index(help, "go run ./mockserver/cmd/mockserver -addr 127.0.0.1:8080 -fixture examples/fixtures/acme.json")
	flags := strings.Index(help, "\nFlags:\n")
	require.Positive(t, example)
	require.Greater(t, flags, example, "the example comes before the flags")
	for _, f := range []string{"-addr", "-fixture", "-issuer", "-trusted-proxy", "-admin-secret", "-access-token-alg", "-cors-origin", "-read-header-timeout", "-read-timeout", "-idle-timeout", "-write-timeout", "-max-connections"} {
		require.Contains(t, help[flags:], "\n  "+f+" ")
	}
}

// TestRunErrorsArePrefixedOnce checks that run refuses each kind of
// mistake and the line the binary prints for it: one "mockserver:"
// prefix, whether the error came from the command line, the network or the
// mockserver package, and the line and column of a fixture that is not
// valid JSON. The rows without a line to compare (want "") hold the
// refusal and the prefix.
func TestRunErrorsArePrefixedOnce(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte("{\n  \"realms\": [\n    {\"name\": \"acme\",}\n  ]\n}\n"), 0o600))
	wrongType := filepath.Join(t.TempDir(), "wrong-type.json")
	require.NoError(t, os.WriteFile(wrongType, []byte("{\"realms\": [{\"name\": \"acme\",\n  \"users\": {}}]}\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad flag", []string{"-nope"}, "mockserver: flag provided but not defined: -nope (mockserver -h lists the flags)\n"},
		{"stray argument", []string{"-addr", "127.0.0.1:0", "extra"}, "mockserver: unexpected arguments [\"extra\"] (mockserver -h lists the flags)\n"},
		{"missing fixture", []string{"-addr", "127.0.0.1:0", "-fixture", "does-not-exist.json"},
			"mockserver: fixture: open does-not-exist.json: no such file or directory\n"},
		{"fixture syntax", []string{"-addr", "127.0.0.1:0", "-fixture", broken},
			"mockserver: fixture " + broken + ": line 3, column 20: invalid character ',' at start of value\n"},
		{"fixture type", []string{"-addr", "127.0.0.1:0", "-fixture", wrongType},
			"mockserver: fixture " + wrongType + ": line 2, column 12: realms[].users: a JSON object where an array is expected\n"},
		{"bad issuer", []string{"-addr", "127.0.0.1:0", "-issuer", "ftp://x"},
			"mockserver: WithIssuer: \"ftp://x\" is not an absolute http(s) URL without query or fragment\n"},
		{"bad port", []string{"-addr", "127.0.0.1:99999"}, "mockserver: listen tcp: address 99999: invalid port\n"},
		{"bad proxy", []string{"-addr", "127.0.0.1:0", "-trusted-proxy", "10.0.0.0/8,nope"}, ""},
		{"zero timeout", []string{"-addr", "127.0.0.1:0", "-read-timeout", "0s"}, ""},
		{"zero write timeout", []string{"-addr", "127.0.0.1:0", "-write-timeout", "0s"}, ""},
		{"no connections", []string{"-addr", "127.0.0.1:0", "-max-connections", "0"}, ""},
		{"bad algorithm", []string{"-addr", "127.0.0.1:0", "-access-token-alg", "HS256"}, ""},
		{"bad CORS origin", []string{"-addr", "127.0.0.1:0", "-cors-origin", "http://a.test,localhost:3000"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			err := run(t.Context(), tc.args, &stdout, &stderr)
			require.Error(t, err)
			require.Empty(t, stdout.String())
			require.Empty(t, stderr.String(), "nothing is printed but the one line of report")
			require.Equal(t, 2, report(err, &stderr))
			if tc.want == "" {
				require.Regexp(t, `^mockserver: [^\n]+\n$`, stderr.String())
				require.Equal(t, 1, strings.Count(stderr.String(), "mockserver:"), stderr.String())
				return
			}
			require.Equal(t, tc.want, stderr.String())
		})
	}
}

// TestRunBoundsSlowClients: a client that sends its headers and never its
// body, or never finishes its headers, loses the connection once the read
// timeouts pass. Only the header timeout was set, so a client that never
// sent its body held a connection for ever. The connection's own deadline
// only turns such a hang into a failure.
func TestRunBoundsSlowClients(t *testing.T) {
	t.Parallel() // it waits on timers, on its own server
	base, stop := start(t, "-read-header-timeout", "200ms", "-read-timeout", "300ms")
	defer func() { require.NoError(t, stop()) }()
	addr := strings.TrimPrefix(base, "http://")
	for name, req := range map[string]string{
		"body never sent": "POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: " + addr +
			"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=",
		"headers never finished": "GET /realms/master/.well-known/openid-configuration HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: ",
	} {
		t.Run(name, func(t *testing.T) {
			conn := testkit.Must(net.Dial("tcp", addr))(t)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
			writeString(t, conn, req)
			testkit.Must(io.Copy(io.Discard, conn))(t, "the server should close the connection, not the test's deadline") // returns once the server closes
		})
	}
}

// TestRunPublicURL: without -issuer the public URL is each request's own,
// and forwarding headers count only from a -trusted-proxy.
func TestRunPublicURL(t *testing.T) {
	issuerOf := func(t *testing.T, base string, header http.Header) string {
		resp := send(t, http.MethodGet, base+"/realms/acme/.well-known/openid-configuration", "", "", header)
		var doc map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		return doc["issuer"].(string)
	}
	fwd := http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"auth.public.test"}}

	base, stop := start(t, "-fixture", "../../../examples/fixtures/acme.json")
	require.Equal(t, base+"/realms/acme", issuerOf(t, base, nil))
	require.Equal(t, base+"/realms/acme", issuerOf(t, base, fwd), "no trusted proxy: headers ignored")
	require.NoError(t, stop())

	base, stop = start(t, "-fixture", "../../../examples/fixtures/acme.json", "-trusted-proxy", "127.0.0.1,::1")
	require.Equal(t, "https://auth.public.test/realms/acme", issuerOf(t, base, fwd))
	require.NoError(t, stop())
}

// TestRunLimitsConnections: with -max-connections 1, a second connection
// is not served while the first carries a request (its body still
// arriving), and is served once that request is answered. Without a cap,
// clients that hold connections could pin memory without bound.
func TestRunLimitsConnections(t *testing.T) {
	t.Parallel() // it waits on timers, on its own server
	base, stop := start(t, "-max-connections", "1", "-read-timeout", "10m")
	defer func() { require.NoError(t, stop()) }()
	addr := strings.TrimPrefix(base, "http://")

	first := testkit.Must(net.Dial("tcp", addr))(t)
	defer first.Close()
	require.NoError(t, first.SetDeadline(time.Now().Add(time.Minute)))
	trickleBody(t, first, addr, "") // "grant_type=" of tokenHead's 1000 bytes
	rest := "client_credentials&client_id=nobody&pad="
	rest += strings.Repeat("x", 1000-len("grant_type=")-len(rest))

	second := testkit.Must(net.Dial("tcp", addr))(t) // the kernel completes the handshake
	defer second.Close()
	writeString(t, second, "GET /realms/master/.well-known/openid-configuration HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	br := bufio.NewReader(second)
	require.NoError(t, second.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err := br.Peek(1)
	var ne net.Error
	require.ErrorAs(t, err, &ne, "no answer while the first connection's request holds the only slot")
	require.True(t, ne.Timeout(), "%v", err)

	writeString(t, first, rest)
	resp := testkit.Must(http.ReadResponse(bufio.NewReader(first), nil))(t, "the first request is answered whole")
	testkit.Must(io.Copy(io.Discard, resp.Body))(t)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	require.NoError(t, second.SetReadDeadline(time.Now().Add(time.Minute)))
	resp = testkit.Must(http.ReadResponse(br, nil))(t, "served once the first connection had no request")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestRunBoundsNonReadingClients: a client that sends requests and never
// reads the answers loses the connection once -write-timeout passes. Without
// a write timeout the server held the connection, and the answers it could
// not write, for ever.
func TestRunBoundsNonReadingClients(t *testing.T) {
	t.Parallel() // it waits on timers, on its own server
	base, stop := start(t, "-write-timeout", "300ms")
	defer func() { require.NoError(t, stop()) }()
	addr := strings.TrimPrefix(base, "http://")
	conn := testkit.Must(net.Dial("tcp", addr))(t)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	const n = 100 // answers far larger than the sockets' buffers
	var reqs strings.Builder
	for range n {
		reqs.WriteString("GET /openapi.json HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
	}
	writeString(t, conn, reqs.String())
	time.Sleep(time.Second) // not reading

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was still open after the write timeout (%d bytes read)", got)
	}
	require.Less(t, got, int64(n*len(mockserver.OpenAPI())), "the server gave up on the answers")
}

// TestRunReadsBodiesItRefuses: the server reads a request's whole body
// before it answers, also when it refuses the request without needing the
// body (a 401, a 415) or after reading only the first 1 MiB (the 400 of an
// oversized body). It used to answer and close the connection with most of
// the body unread, and the kernel then reset the connection: a client that
// writes its whole request before it reads, as a reverse proxy does, lost
// the answer, and nginx turned a 401 into a 502 Bad Gateway. The test's
// connection has a small send buffer, so it writes its body only as fast as
// the server reads it.
func TestRunReadsBodiesItRefuses(t *testing.T) {
	base, stop := start(t, "-admin-secret", "s3cret", "-access-token-alg", "ES256")
	defer func() { require.NoError(t, stop()) }()
	addr := strings.TrimPrefix(base, "http://")
	token := adminToken(t, base, "s3cret")
	const decision = "/realms/master/authorization-decision-provider/authorize"
	for _, tc := range []struct {
		name, auth, contentType string
		size                    int
		want                    int
	}{
		{"no credentials", "", "application/json", 600 << 10, http.StatusUnauthorized},
		{"refused token", "Bearer not-a-token", "application/json", 2 << 20, http.StatusUnauthorized},
		{"wrong content type", "Bearer " + token, "text/plain", 600 << 10, http.StatusUnsupportedMediaType},
		{"oversized body", "Bearer " + token, "application/json", 4 << 20, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := testkit.Must(net.Dial("tcp", addr))(t)
			defer conn.Close()
			require.NoError(t, conn.(*net.TCPConn).SetWriteBuffer(64<<10))
			require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
			head := "POST " + decision + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: " + tc.contentType +
				"\r\nContent-Length: " + fmt.Sprint(tc.size) + "\r\n"
			if tc.auth != "" {
				head += "Authorization: " + tc.auth + "\r\n"
			}
			body := `{"clientId":"x","resources":[{"name":"r"}],"context":{"attributes":{"pad":"` +
				strings.Repeat("a", tc.size-len(`{"clientId":"x","resources":[{"name":"r"}],"context":{"attributes":{"pad":""}}}`)) + `"}}}`
			written := make(chan error, 1)
			go func() {
				_, err := io.WriteString(conn, head+"\r\n"+body)
				written <- err
			}()
			br := bufio.NewReader(conn)
			resp := testkit.Must(http.ReadResponse(br, nil))(t, "the answer arrives whole")
			testkit.Must(io.Copy(io.Discard, resp.Body))(t)
			resp.Body.Close()
			require.Equal(t, tc.want, resp.StatusCode)
			require.NoError(t, <-written, "the server reads the whole body rather than reset the connection")

			// The body was read as a body: the connection carries the next
			// request, or says it closes.
			if resp.Close {
				testkit.Must(io.Copy(io.Discard, br))(t)
				return
			}
			writeString(t, conn, "GET /realms/master/.well-known/openid-configuration HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
			resp = testkit.Must(http.ReadResponse(br, nil))(t)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}

	// A client that waits for 100 Continue is answered without being asked
	// for its body, and the connection closes.
	conn := testkit.Must(net.Dial("tcp", addr))(t)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	testkit.Must(io.WriteString(conn, "POST "+decision+" HTTP/1.1\r\nHost: "+addr+
		"\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n"))(t)
	br := bufio.NewReader(conn)
	resp := testkit.Must(http.ReadResponse(br, nil))(t)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "not 100 Continue")
	require.True(t, resp.Close)
}

// adminToken gets a master token of the platform-admin client.
func adminToken(t *testing.T, base, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {secret}}
	return postForm(t, base+"/realms/master/protocol/openid-connect/token", form)["access_token"].(string)
}

// TestRunDoesNotWaitForBodiesItRefuses: a refused request whose body the
// server will not read whole gets its answer without waiting for the body,
// and its connection closes: a body declared longer than the server ever
// drains is answered at once, and one that trickles is given up on after
// a short while, long before the read timeout (an hour here), so that such
// a client holds neither its request nor a graceful shutdown. The
// connection's deadline only keeps a regression from hanging the test.
func TestRunDoesNotWaitForBodiesItRefuses(t *testing.T) {
	t.Parallel() // it waits on timers, on its own server
	base, stop := start(t, "-read-timeout", "1h")
	addr := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		name   string
		length int
	}{
		{"declared past what is ever drained", 1 << 30},
		{"trickling", 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := testkit.Must(net.Dial("tcp", addr))(t)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
			testkit.Must(io.WriteString(conn, "POST /realms/master/authorization-decision-provider/authorize HTTP/1.1\r\nHost: "+addr+
				"\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(tc.length)+"\r\n\r\n{\"a\":"))(t)
			resp := testkit.Must(http.ReadResponse(bufio.NewReader(conn), nil))(t, "the answer comes without the rest of the body")
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.True(t, resp.Close, "the connection closes after the answer")
		})
	}
	require.NoError(t, stop(), "a clean shutdown: no refused request is left waiting for its body")
}

// requireServed requires that a new client, on a connection of its own,
// gets an answer from the server at base within within: a bound far above
// what an answer takes, which only turns a wait for a slot into a failure.
func requireServed(t *testing.T, base string, within time.Duration, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	c := &http.Client{Transport: checker.Transport(&http.Transport{DisableKeepAlives: true})}
	req := testkit.Must(http.NewRequestWithContext(ctx, http.MethodGet, base+"/realms/master/.well-known/openid-configuration", nil))(t)
	resp := testkit.Must(c.Do(req))(t, msg)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestRunWebUI: the web UI is served only with -webui, and there a realm
// administrator signs in through the login form and sees the realm.
func TestRunWebUI(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("webui=", on), func(t *testing.T) {
			args := []string{"-fixture", "../../../examples/fixtures/acme.json"}
			if on {
				args = append(args, "-webui")
			}
			base, stop := start(t, args...)
			resp := get(t, base+"/ui/realms/acme/login")
			if !on {
				require.Equal(t, http.StatusNotFound, resp.StatusCode)
				require.NoError(t, stop())
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode)
			jar := testkit.Must(cookiejar.New(nil))(t)
			browser := &http.Client{Transport: client.Transport, Jar: jar}
			form := url.Values{"username": {"alice"}, "password": {"alice"}}
			req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/ui/realms/acme/login", strings.NewReader(form.Encode())))(t)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			home := testkit.Must(browser.Do(req))(t) // follows the redirect to the realm's first page
			b, err := io.ReadAll(home.Body)
			home.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, home.StatusCode)
			require.Contains(t, string(b), "Acme EU")
			require.NoError(t, stop())
		})
	}
}

// TestRunLogDenials: with -log-denials, a DENY of /authorize is explained
// on standard error, and a GRANT is not; without it nothing is.
func TestRunLogDenials(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("log-denials=", on), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			pr, pw := io.Pipe()
			var stderr testkit.SyncBuffer
			args := []string{"-addr", "127.0.0.1:0", "-fixture", "../../../examples/fixtures/acme.json", "-access-token-alg", "ES256"}
			if on {
				args = append(args, "-log-denials")
			}
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, args, pw, &stderr)
				pw.Close()
			}()
			sc := bufio.NewScanner(pr)
			require.True(t, sc.Scan())
			base := strings.TrimPrefix(sc.Text(), "mockserver listening on ")
			go func() {
				for sc.Scan() {
				}
			}()

			form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"erin"}, "password": {"erin"}}
			tok := postForm(t, base+"/realms/acme/protocol/openid-connect/token", form)["access_token"].(string)
			for _, scope := range []string{"read", "write"} { // erin may read invoices, not orders
				resource := map[string]string{"read": "invoices", "write": "orders"}[scope]
				body := `{"clientId":"orders-api","resources":[{"name":"` + resource + `","scopes":["` + scope + `"]}],"context":{}}`
				resp := send(t, http.MethodPost, base+"/realms/acme/authorization-decision-provider/authorize", "application/json", body,
					http.Header{"Authorization": {"Bearer " + tok}})
				require.Equal(t, http.StatusOK, resp.StatusCode)
			}
			cancel()
			require.NoError(t, <-done)
			logged := stderr.String()
			if !on {
				require.NotContains(t, logged, "DENY")
				return
			}
			require.Equal(t, 1, strings.Count(logged, "authorization-decision-provider/authorize: "), logged)
			require.Contains(t, logged, "DENY for erin on client orders-api")
			require.Contains(t, logged, `permission "clerks read and write orders" does not match:`)
			require.Contains(t, logged, "role order-clerk: not held")
			require.NotContains(t, logged, tok)
		})
	}
}

func postForm(t *testing.T, u string, form url.Values) map[string]any {
	t.Helper()
	resp := send(t, http.MethodPost, u, "application/x-www-form-urlencoded", form.Encode(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// TestRunRefusesBadReplicaFlags: each replica flag's mistake is refused
// at start with a message naming the flag and what to fix, and the Redis
// password never appears in it.
func TestRunRefusesBadReplicaFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"short key seed", []string{"-key-seed", "short"}, "-key-seed is 5 bytes: use at least 16"},
		{"short nonce secret", []string{"-nonce-secret", "short"}, "-nonce-secret: dpop: NewHMACNonces: the secret is 5 bytes: use at least 32"},
		{"TLS redis", []string{"-redis", "rediss://:hunter2@h:6380"}, "-redis: redis URL: rediss (TLS) is not supported"},
		{"not a redis URL", []string{"-redis", "http://:hunter2@h:6380"}, "the scheme must be redis://"},
		{"unparsable redis URL", []string{"-redis", "redis://u:hunter2%zz@h:6380"}, "-redis: redis URL: an invalid %-escape"},
		{"a slash in the password", []string{"-redis", "redis://u:hunter2/x@h:6380"}, "-redis: redis URL"},
		{"password alone, bad database", []string{"-redis", "redis://hunter2@h:6380/x"}, "the path must be a database number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(t.Context(), append([]string{"-addr", "127.0.0.1:0"}, tc.args...), io.Discard, io.Discard)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

// TestRunReplicasShareKeys: two binaries given one fixture and one
// -key-seed behind one front (requests name the front's host) sign with
// the same keys: they publish the same JWKS, and each one's tokens verify
// at the other. Without -redis a binary serves only the tokens it minted
// itself (a revocation at the other could never reach it), so the other's
// token is refused as revoked while its own changes its configuration;
// TestMockserverReplicasShareRedis (redisstore) serves it across replicas
// with -redis. Without the seed the keys differ.
func TestRunReplicasShareKeys(t *testing.T) {
	const fixture = "../../../examples/fixtures/acme.json"
	call := func(t *testing.T, method, base, path, token, ctype, body string) *http.Response {
		t.Helper()
		req := testkit.Must(http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body)))(t)
		req.Host = "front.test"
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp := testkit.Must(client.Do(req))(t)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	adminToken := func(t *testing.T, base string) string {
		t.Helper()
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"platform-admin"}, "client_secret": {"admin-secret"}}
		resp := call(t, http.MethodPost, base, "/realms/master/protocol/openid-connect/token", "", "application/x-www-form-urlencoded", form.Encode())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
		return tok.AccessToken
	}
	jwks := func(t *testing.T, base string) string {
		t.Helper()
		resp := call(t, http.MethodGet, base, "/realms/master/protocol/openid-connect/certs", "", "", "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b := testkit.Must(io.ReadAll(resp.Body))(t)
		return string(b)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		sameKeys bool
	}{
		{"same seed", []string{"-key-seed", "0123456789abcdef-replicas"}, true},
		{"no seed", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-fixture", fixture}, tc.args...)
			a, stopA := start(t, args...)
			b, stopB := start(t, args...)
			byA := adminToken(t, a)
			if tc.sameKeys {
				require.JSONEq(t, jwks(t, a), jwks(t, b), "one seed, one JWKS")
			} else {
				require.NotEqual(t, jwks(t, a), jwks(t, b), "random keys per binary")
			}
			resp := call(t, http.MethodPatch, b, "/admin/config", byA, "application/json", `{"maxPageSize":50}`)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a's token at b, without -redis")
			var body struct{ Message string }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			if tc.sameKeys {
				require.Equal(t, "invalid token: token revoked", body.Message, "it verifies, and is refused as b cannot know a's revocations")
			} else {
				require.NotEmpty(t, body.Message)
				require.NotContains(t, body.Message, "revoked", "it does not verify")
			}
			resp = call(t, http.MethodPatch, b, "/admin/config", adminToken(t, b), "application/json", `{"maxPageSize":50}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, "b's own token")
			require.NoError(t, stopA())
			require.NoError(t, stopB())
		})
	}
}

// writeString is io.WriteString, failing the test on an error.
func writeString(t *testing.T, w io.Writer, s string) {
	t.Helper()
	testkit.Must(io.WriteString(w, s))(t)
}
