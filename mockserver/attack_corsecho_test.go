package mockserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackPreflightRefusalRepeatsNoSecret (a-server14 F1): the CORS
// preflight's 403 formats the path's realm and the Origin header with %s,
// not %q, so sayable (echo.go), which reads only quoted strings and bare
// runs of more than 63 bytes, lets both through whole. Every secret the
// server makes has an identifier's shape and is at most 43 bytes (a client
// secret, an initial password, an authorization code, a refresh-less
// client's secret): sent in the realm's place of a path -- a base URL
// configured with the secret by mistake, the same mistake a-server13 F1
// and a-fix13c F1 closed for every other route -- it comes back word for
// word, where the 404 of the same path describes it. The rule of the
// error writers is that no caller's value is repeated unless echoable.
func TestAttackPreflightRefusalRepeatsNoSecret(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithFixture(orgFixture()))
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	secret := s.AdminSecret() // the platform admin's client secret: 32 bytes, identifier-shaped
	require.Len(t, secret, 32)
	const origin = "https://Zq8_tUm3-WvYx5Kp2LnRb7"

	for _, path := range []string{
		"/realms/" + secret + "/protocol/openid-connect/token",
		"/admin/realms/" + secret + "/organizations",
		"/.well-known/openid-configuration/realms/" + secret,
		"/realms/" + secret + "/authorization-decision-provider/authorize",
	} {
		// The same path without CORS: the 404/401 describes the value.
		req, err := http.NewRequest(http.MethodOptions, ts.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("OPTIONS %s -> %d %s", path[:20], resp.StatusCode, b)
		if resp.StatusCode == http.StatusNotFound {
			continue
		}
		assert.NotContains(t, string(b), secret, "a preflight's refusal repeats the path's secret: %s", b)
		assert.NotContains(t, string(b), "Zq8_tUm3-WvYx5Kp2LnRb7", "a preflight's refusal repeats the Origin header: %s", b)
	}
	// The same class: the router's 404 and 405 format the request's
	// method with %s (server.go), so a method of an identifier's shape
	// comes back whole.
	for _, path := range []string{"/admin/health", "/admin/realms/acme/organizations/x/y/z/w/v"} {
		req, err := http.NewRequest(secret, ts.URL+path, nil)
		require.NoError(t, err)
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("%.6s... %s -> %d %s", secret, path, resp.StatusCode, b)
		assert.NotContains(t, string(b), secret, "the router's refusal repeats the method: %s", b)
	}
	// The plain request on the same path describes the value.
	resp, err := ts.Client().Post(ts.URL+"/admin/realms/"+secret+"/organizations", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotContains(t, string(b), secret)
}
