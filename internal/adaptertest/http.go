package adaptertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Ran is the body the protected handler of an HTTP adapter's test answers
// with, followed by the operation: proof that it ran.
const Ran = "ran "

// NoDecision is what the protected handler of an HTTP adapter's test
// appends when it runs without a decision in its request.
const NoDecision = " without a decision"

// Path is the path of operation op in an HTTP adapter's test: GET
// /orders/{op}. The router serves all three operations; the adapter's map
// names only OpRead and OpWrite.
func Path(op string) string { return "/orders/" + op }

// BuildHTTP builds an HTTP adapter's test service around c: a router of the
// framework under test serving GET Path(op) for the three operations, each
// protected by the adapter with the map of Operations (by path), answering
// an outage with a 503 (middleware.ServiceUnavailable), and a protected
// handler that writes Ran and the operation whenever it runs, followed by
// NoDecision when the request does not carry the adapter's decision.
type BuildHTTP func(t *testing.T, c Checker) http.Handler

// RunHTTP runs every case of Cases against the services build makes, each
// on its own loopback server, and checks the class of each answer: the
// status, the service's error body, WWW-Authenticate on a 401, that the
// protected handler ran only when granted, and that the gateway was asked
// only when the case says so.
func RunHTTP(t *testing.T, env *Env, build BuildHTTP) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			checker := env.CheckerFor(c)
			srv := httptest.NewServer(build(t, checker))
			t.Cleanup(srv.Close)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+Path(c.Operation), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range c.Values(env.Tokens) {
				req.Header.Add("Authorization", v)
			}
			resp, body := roundTrip(t, srv.Client(), req)
			if got, want := resp.StatusCode, c.Want.HTTPStatus(); got != want {
				t.Fatalf("status %d, want %d (%s); body %q", got, want, c.Want, body)
			}
			if asked := checker.Calls() > 0; asked != c.Asks {
				t.Errorf("gateway asked: %v, want %v", asked, c.Asks)
			}
			if c.Want == Granted {
				if string(body) != Ran+c.Operation {
					t.Errorf("body %q: the protected handler did not run", body)
				}
				return
			}
			if strings.Contains(string(body), Ran) {
				t.Errorf("body %q: the protected handler ran", body)
			}
			CheckErrorBody(t, resp.StatusCode, body)
			if c.Want == Unauthenticated && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("a 401 without a Bearer challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
			for name, tok := range env.Tokens {
				if strings.Contains(string(body), tok) {
					t.Errorf("the answer quotes %s's token", name)
				}
			}
		})
	}
}

// CheckErrorBody checks that body is the service's error shape,
// {"error": "<reason phrase of status>", "message": "..."}, and nothing
// else: no other member, and nothing after it (a handler that ran after
// the answer was written would have appended its own).
func CheckErrorBody(t *testing.T, status int, body []byte) {
	t.Helper()
	if !json.Valid(body) {
		t.Errorf("body %q is not one JSON value", body)
		return
	}
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Errorf("body %q is not the service's error shape: %v", body, err)
		return
	}
	if e.Error != http.StatusText(status) || e.Message == "" {
		t.Errorf("body %q: want error %q and a message", body, http.StatusText(status))
	}
}

// PostOverridden sends POST /orders to h, on a loopback server of its own,
// with a Bearer token and X-HTTP-Method-Override: DELETE, and returns the
// status and body: what an adapter's test of a trusted method override
// asks.
func PostOverridden(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/orders", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("X-HTTP-Method-Override", "DELETE")
	resp, body := roundTrip(t, srv.Client(), req)
	return resp.StatusCode, string(body)
}

// roundTrip sends req with c and returns the response and its whole body
// (closed); no answer, or a body not read whole, fails t.
func roundTrip(t *testing.T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// GetAs sends GET path to h, on a loopback server of its own, with token
// as a Bearer token, and returns the status and body; no answer fails the
// test.
func GetAs(t *testing.T, h http.Handler, path, token string) (int, []byte) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, body := roundTrip(t, srv.Client(), req)
	return resp.StatusCode, body
}

// ChainCase is a request to a chain's test service: GET Path with Auth as
// the Authorization value (none when empty) and Header's name-value pairs;
// the answer must have Status and, when Body is set, the body Body (a 200)
// or a body containing Body (another status: the handler's own error).
type ChainCase struct {
	Name, Path, Auth string
	Header           []string
	Status           int
	Body             string
}

// RunChain serves h on a loopback server of its own, sends each case to it
// in a subtest of its own and checks its
// answer: the status, that the chain's outer middleware ran (it sets
// X-Trace: outer) and the body; an answer other than a 200 and without a
// Body must be the service's error shape (CheckErrorBody).
func RunChain(t *testing.T, h http.Handler, cases []ChainCase) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+c.Path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Auth != "" {
				req.Header.Set("Authorization", c.Auth)
			}
			for i := 0; i+1 < len(c.Header); i += 2 {
				req.Header.Set(c.Header[i], c.Header[i+1])
			}
			resp, body := roundTrip(t, srv.Client(), req)
			if resp.StatusCode != c.Status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, c.Status, body)
			}
			if got := resp.Header.Get("X-Trace"); got != "outer" {
				t.Errorf("X-Trace %q: the middleware before the guard did not run", got)
			}
			switch {
			case c.Status == http.StatusOK && string(body) != c.Body:
				t.Errorf("body %q, want %q", body, c.Body)
			case c.Status != http.StatusOK && c.Body != "" && !strings.Contains(string(body), c.Body):
				t.Errorf("body %q does not contain %q", body, c.Body)
			case c.Status != http.StatusOK && c.Body == "":
				CheckErrorBody(t, resp.StatusCode, body)
			}
		})
	}
}
