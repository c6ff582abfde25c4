package pep_test

// End-to-end tests: the client against the reference server (mockserver)
// over real HTTP, for every client call with Bearer and DPoP tokens, on the
// corp fixture (internal/corpfixture, also used by misconfig_test.go and
// hostile_test.go). Expected answers are worked out by hand from it, never
// from the code under test.

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/internal/corpfixture"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// e2e is one reference server and a way to get clients of it.
type e2e struct {
	t  *testing.T
	gw *mockservertest.Server
}

// startE2E starts a reference server with the corp fixture that signs
// access tokens ES256 (es256Tokens).
func startE2E(t *testing.T) *e2e {
	t.Helper()
	return &e2e{t: t, gw: mockservertest.Start(t, mockserver.WithFixture(corpfixture.Corp), es256Tokens)}
}

// startDefaultE2E starts a reference server with the corp fixture and
// nothing else, as a user starts one: it signs access tokens RS256, which
// it checks.
func startDefaultE2E(t *testing.T) *e2e {
	t.Helper()
	e := &e2e{t: t, gw: mockservertest.Start(t, mockserver.WithFixture(corpfixture.Corp))}
	head, _, _ := strings.Cut(e.gw.Token("corp", "uma"), ".")
	raw := testkit.Must(base64.RawURLEncoding.DecodeString(head))(t)
	var h struct{ Alg string }
	require.NoError(t, json.Unmarshal(raw, &h))
	require.Equal(t, "RS256", h.Alg, "the default server's access tokens")
	return e
}

// client returns a docs-api client holding user's token of the given kind,
// with hangguard.Timeout and then opts.
func (e *e2e) client(user, kind string, opts ...pep.Option) *pep.Client {
	e.t.Helper()
	c, err := hangguard.NewPep(e.gw.URL, "corp", "docs-api", opts...)
	require.NoError(e.t, err)
	switch kind {
	case "Bearer":
		c.SetToken(e.gw.Token("corp", user))
	case "DPoP":
		signer, err := dpop.GenerateKey()
		require.NoError(e.t, err)
		c.SetDPoPToken(e.gw.Token("corp", user, mockserver.TokenDPoPBinding(signer.Thumbprint())), signer)
	default:
		e.t.Fatalf("unknown token kind %q", kind)
	}
	return c
}

var tokenKinds = []string{"Bearer", "DPoP"}

// TestE2EEveryCall: every call of the client, with a Bearer and a DPoP
// token, against the corp fixture: roles direct, through a group and
// through an organization, a permission that needs the DELETE method in
// the request context, undefined names (ERROR). The rules each call keeps
// are held by the tests of that call (check_test.go, batch_test.go,
// list_test.go, organizations_test.go) and the server's by mockserver's.
// Its server is the default one, RS256 tokens and all (startDefaultE2E),
// as a user starts it.
func TestE2EEveryCall(t *testing.T) {
	t.Parallel()
	e := startDefaultE2E(t)
	for _, kind := range tokenKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			uma, wes, vic := e.client("uma", kind), e.client("wes", kind), e.client("vic", kind)
			for _, tt := range []struct {
				c                            *pep.Client
				resource, scope, method, who string
				want                         pep.Status
			}{
				{uma, "docs", "read", "", "uma", pep.Grant},
				{uma, "docs", "write", "", "uma", pep.Deny},
				{wes, "docs", "write", "", "wes", pep.Grant},
				{wes, "docs", "delete", "", "wes", pep.Deny},
				{wes, "docs", "delete", http.MethodPost, "wes", pep.Deny},
				{wes, "docs", "delete", http.MethodDelete, "wes", pep.Grant},
				{wes, "docs", "delete", http.MethodPost, "wes", pep.Deny}, // the DELETE's GRANT is not the POST's
				{vic, "reports", "read", "", "vic", pep.Grant},
				{vic, "docs", "read", "", "vic", pep.Deny},
				{uma, "docs", "print", "", "uma", pep.Error},
				{uma, "nosuch", "read", "", "uma", pep.Error},
			} {
				var opts []pep.CallOption
				if tt.method != "" {
					opts = append(opts, pep.WithRequestContext(pep.RequestContext{Method: tt.method, Path: "/docs/1"}))
				}
				d := testkit.Must(tt.c.Check(t.Context(), tt.resource, tt.scope, opts...))(t)
				assert.Equal(t, tt.want, d.Status, "%s %s:%s %s", tt.who, tt.resource, tt.scope, tt.method)
				requireGatewayCause(t, d)
			}

			res := testkit.Must(wes.CheckMany(t.Context(), []pep.Resource{
				{Name: "docs", Scopes: []string{"write", "read", "write"}},
				{Name: "reports", Scopes: []string{"read"}},
				{Name: "docs", Scopes: []string{"print"}},
			}))(t)
			var got []string
			for _, d := range res.Decisions {
				got = append(got, d.Resource+":"+d.Scope+"="+d.Status.String())
			}
			assert.Equal(t, []string{"docs:write=GRANT", "docs:read=DENY", "reports:read=DENY", "docs:print=ERROR"}, got,
				"request order, duplicates removed")
			assert.Equal(t, pep.Deny, res.Status)

			all := testkit.Must(wes.ListGranted(t.Context(), nil))(t)
			require.Len(t, all, 1)
			assert.Equal(t, pep.Permission{Resource: "docs", Scope: "write", Status: pep.Grant}, all[0])
			none := testkit.Must(vic.ListGranted(t.Context(), []pep.Resource{{Name: "docs"}}))(t)
			assert.Empty(t, none)

			org := testkit.Must(wes.Organizations(t.Context()))(t)
			require.Len(t, org.Tenants, 1)
			assert.Equal(t, "North", org.Tenants[0].Name)
			var depts []string
			for _, d := range org.Tenants[0].Departments {
				depts = append(depts, d.Name)
			}
			assert.ElementsMatch(t, []string{"Ops", "Night"}, depts)
			org = testkit.Must(vic.Organizations(t.Context()))(t)
			assert.Empty(t, org.Tenants)
		})
	}
}

// subject returns a JWT's sub claim without verifying it (the server did).
func subject(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	payload := testkit.Must(base64.RawURLEncoding.DecodeString(parts[1]))(t)
	var claims struct{ Sub string }
	require.NoError(t, json.Unmarshal(payload, &claims))
	return claims.Sub
}

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}
