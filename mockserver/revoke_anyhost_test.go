package mockserver_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
)

// TestRevocationRevokesATokenMintedUnderAnotherNameOfTheServer: without
// WithIssuer (the binary without -issuer), a token's iss is the name the
// client addressed the server by. A token minted at localhost:PORT and
// revoked (RFC 7009) at 127.0.0.1:PORT, the same server, realm and
// client, is revoked: the 200 never answers a revocation that left the
// token served under the name it was minted under. A token that is not
// the realm's is still 200 with nothing recorded.
func TestRevocationRevokesATokenMintedUnderAnotherNameOfTheServer(t *testing.T) {
	t.Parallel()
	ms := testkit.Must(mockserver.New(mockserver.WithFixture(servertest.DPoPFixture())))(t)
	srv := testkit.Serve(t, ms)
	u := parseURL(t, srv.URL)
	minted, revokedAt := "localhost:"+u.Port(), u.Host
	call := func(host, path, ctype, body string, h http.Header) servertest.Result {
		t.Helper()
		req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body)))(t)
		req.Host = host
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", ctype)
		resp := testkit.Must(srv.Client().Do(req))(t)
		defer resp.Body.Close()
		b := testkit.Must(io.ReadAll(resp.Body))(t)
		return servertest.Result{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	form := "application/x-www-form-urlencoded"
	res := call(minted, tokenPath, form, url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"},
		"username": {"alice"}, "password": {"alice-pw"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	token := res.JSON(t)["access_token"].(string)
	decide := func(host string) int {
		return call(host, authorizePath, "application/json", `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read"]}],"context":{}}`,
			http.Header{"Authorization": {"Bearer " + token}}).Status
	}
	require.Equal(t, http.StatusOK, decide(minted))

	res = call(revokedAt, revokePath, form, url.Values{"client_id": {"admin-cli"}, "token": {token}}.Encode(), nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, http.StatusUnauthorized, decide(minted), "a token whose revocation was answered 200 is refused")

	res = call(revokedAt, revokePath, form, url.Values{"client_id": {"admin-cli"}, "token": {token + "x"}}.Encode(), nil)
	require.Equal(t, http.StatusOK, res.Status, "a token that is not the realm's: RFC 7009 section 2.2: %s", res.Body)
}
