package pep_test

import (
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/core"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// TestNewValidates: New refuses what it cannot use and says what to fix,
// for every argument at once. The rules of each option are internal/core's
// (settings_test.go); a row here shows that they reach pep's New.
func TestNewValidates(t *testing.T) {
	t.Parallel()
	const url = "https://gateway.example.com"
	tests := []struct {
		name                 string
		gateway, realm, clnt string
		opts                 []pep.Option
		wantErrs             []string // substrings, each must appear
	}{
		{name: "defaults", gateway: url, realm: "acme", clnt: "orders-api"},
		{name: "path prefix and trailing slash", gateway: url + "/gw/", realm: "acme", clnt: "orders-api"},
		{name: "everything disabled", gateway: url, realm: "acme", clnt: "orders-api",
			opts: []pep.Option{pep.WithCache(0, 0, 0), pep.WithRetry(0, 0, 0), pep.WithBreaker(0, 0)}},
		{name: "empty URL", realm: "acme", clnt: "orders-api", wantErrs: []string{"pep: the gateway URL is empty; use an absolute http(s) URL"}},
		{name: "relative URL", gateway: "gateway.example.com", realm: "acme", clnt: "orders-api", wantErrs: []string{`has scheme ""`}},
		{name: "wrong scheme", gateway: "ftp://gateway.example.com", realm: "acme", clnt: "orders-api", wantErrs: []string{`has scheme "ftp"`}},
		{name: "no host", gateway: "https://", realm: "acme", clnt: "orders-api", wantErrs: []string{"has no host"}},
		{name: "query", gateway: url + "?x=1", realm: "acme", clnt: "orders-api", wantErrs: []string{"must not have a query or fragment"}},
		{name: "user info", gateway: "https://admin:hunter2@gateway.example.com", realm: "acme", clnt: "orders-api", wantErrs: []string{"must not hold user information"}},
		// a-dpop10 F1: the client dials xn--internal-o0e.example; its proofs
		// and nonces must not name internal.example.
		{name: "host not ASCII", gateway: "http://\u0130nternal.example", realm: "acme", clnt: "orders-api",
			wantErrs: []string{"pep: the gateway URL has a host that is not ASCII; give an internationalised name in its A-label form (xn--...)"}},
		{name: "unparseable", gateway: "https://gate way.example.com/%zz", realm: "acme", clnt: "orders-api", wantErrs: []string{"does not parse"}},
		{name: "empty realm", gateway: url, clnt: "orders-api", wantErrs: []string{"pep: the realm is empty"}},
		{name: "empty client", gateway: url, realm: "acme", wantErrs: []string{"pep: the client ID is empty"}},
		{name: "all three at once", wantErrs: []string{"gateway URL is empty", "realm is empty", "client ID is empty"}},
		{name: "nil http client", gateway: url, realm: "acme", clnt: "c", opts: []pep.Option{pep.WithHTTPClient(nil)},
			wantErrs: []string{"pep: WithHTTPClient: the *http.Client is nil"}},
		{name: "zero timeout", gateway: url, realm: "acme", clnt: "c", opts: []pep.Option{pep.WithTimeout(0)},
			wantErrs: []string{"pep: WithTimeout: the timeout must be positive, got 0s"}},
		// a-client13 F3: one Check against a gateway answering 503 sent
		// over ten thousand requests.
		{name: "retries that flood the gateway", gateway: url, realm: "acme", clnt: "c",
			opts: []pep.Option{pep.WithRetry(1<<30, time.Nanosecond, time.Nanosecond)},
			wantErrs: []string{"pep: WithRetry: max must be from 0 (no retries) to 10, got 1073741824",
				"pep: WithRetry: minWait must be at least 1ms when retrying, got 1ns"}},
		// a-client13 F3: a bound no decision fits in, and the cache kept
		// nothing.
		{name: "byte bound no decision fits in", gateway: url, realm: "acme", clnt: "c",
			opts:     []pep.Option{pep.WithCacheMaxBytes(1)},
			wantErrs: []string{"pep: WithCacheMaxBytes: the byte bound must be at least", "got 1"}},
		// a-client13 F5: the cache package's own wording showed through.
		{name: "cache size past the cache's limit", gateway: url, realm: "acme", clnt: "c",
			opts:     []pep.Option{pep.WithCache(math.MaxInt, time.Second, time.Second)},
			wantErrs: []string{"pep: WithCache: size must be from 0 (no cache) to 2147483648 entries, got " + strconv.Itoa(math.MaxInt)}},
		{name: "the bounds themselves", gateway: url, realm: "acme", clnt: "c",
			opts: []pep.Option{pep.WithRetry(10, time.Millisecond, time.Millisecond),
				pep.WithCache(1<<31, time.Second, time.Second), pep.WithCacheMaxBytes(core.MinCacheMaxBytes)}},
		{name: "a later option wins", gateway: url, realm: "acme", clnt: "c",
			opts: []pep.Option{pep.WithBatchSize(0), pep.WithBatchSize(10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := pep.New(tt.gateway, tt.realm, tt.clnt, tt.opts...)
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				require.NotNil(t, c)
				return
			}
			require.Error(t, err)
			assert.Nil(t, c)
			for _, want := range tt.wantErrs {
				assert.Contains(t, err.Error(), want)
			}
			assert.NotContains(t, err.Error(), "hunter2", "secrets in the URL are not echoed")
			assert.NotContains(t, err.Error(), ": cache:", "the cache package's wording does not show through")
		})
	}
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

func TestWithHTTPClientIsCopiedNotMutated(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	transport := &countingTransport{base: g.Client().Transport}
	var redirectCalls atomic.Int64
	checkRedirect := func(*http.Request, []*http.Request) error {
		redirectCalls.Add(1)
		return nil
	}
	hc := &http.Client{Transport: transport, CheckRedirect: checkRedirect, Timeout: time.Minute}
	before := *hc

	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(hc))
	c.SetToken(g.token(t, "alice"))
	d := checked(t, c, "orders", "read")
	require.True(t, d.Allowed())

	assert.Equal(t, int64(1), transport.n.Load(), "the caller's transport carries the requests")
	assert.Same(t, before.Transport, hc.Transport)
	assert.Equal(t, before.Timeout, hc.Timeout)
	require.NotNil(t, hc.CheckRedirect)
	assert.NoError(t, hc.CheckRedirect(nil, nil), "the caller's CheckRedirect is untouched")
	assert.Equal(t, int64(1), redirectCalls.Load())

	// The token layer clones requests: nothing leaks into the caller's client.
	req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, g.URL+"/elsewhere", nil))(t)
	resp := testkit.Must(hc.Do(req))(t)
	require.NoError(t, resp.Body.Close())
	assert.Empty(t, g.last(t).Authorization, "the caller's own client sends no token")
}

func TestStatusString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status pep.Status
		want   string
	}{
		{pep.Grant, "GRANT"}, {pep.Deny, "DENY"}, {pep.Error, "ERROR"}, {pep.Status(7), "Status(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.status.String())
		})
	}
}

func TestZeroValuesNeverAllow(t *testing.T) {
	t.Parallel()
	var s pep.Status
	assert.NotEqual(t, pep.Grant, s)
	assert.False(t, pep.Decision{}.Allowed())
	assert.False(t, pep.Result{}.Allowed())
	assert.False(t, pep.Result{Status: pep.Grant}.Allowed(), "no decisions: nothing was granted")
	assert.False(t, pep.Decision{Status: pep.Grant, Cause: pep.ErrUnavailable}.Allowed())
	assert.False(t, pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Status: pep.Grant}, {Status: pep.Error}}}.Allowed())
}

// TestMalformedAnswerErrorText: the reference server never leaves a pair
// out, so the hook answers in its place.
func TestMalformedAnswerErrorText(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	g.setHook(bodyHook(`{"status":"GRANT","permissions":[]}`))
	c := g.newClient(t)
	c.SetToken(g.token(t, "alice"))
	d := checked(t, c, "orders", "read")
	assert.Equal(t, `pep: gateway answered 200 OK: malformed gateway response: the answer does not list the pair`, d.Cause.Error(),
		"the text names no resource: a caller may choose one that holds its token")
}
