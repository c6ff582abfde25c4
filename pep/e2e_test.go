package pep_test

// End-to-end tests: the client against the reference server (mockserver)
// over real HTTP, for every client call with Bearer and DPoP tokens, and
// every fail-closed path the server can be made to produce. Expected answers
// are worked out by hand from the corp fixture below, never from the code
// under test.

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// corp: ada manages the realm; uma reads docs (a direct role) and sits in South/Desk; wes writes
// docs through the role linked to organization North, where he sits in Ops
// and Night, and may delete docs only with DELETE; vic reads reports through
// the audit group and has no assignment.
var corp = mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
	Name:   "corp",
	Roles:  []mockserver.FixtureRole{{Name: "reader"}, {Name: "writer"}, {Name: "auditor"}},
	Groups: []mockserver.FixtureGroup{{Name: "audit", Roles: []string{"auditor"}}},
	Users: []mockserver.FixtureUser{
		{Username: "ada", Roles: []string{"realm-admin"}},
		{Username: "uma", Roles: []string{"reader"}},
		{Username: "wes"},
		{Username: "vic", Groups: []string{"audit"}},
	},
	Clients: []mockserver.FixtureClient{{
		ClientID: "docs-api", Secret: "docs-secret",
		Resources: []mockserver.FixtureResource{
			{Name: "docs", Scopes: []string{"read", "write", "delete"}},
			{Name: "reports", Scopes: []string{"read"}},
		},
		Permissions: []mockserver.FixturePermission{
			{Name: "readers read docs", Resource: "docs", Scopes: []string{"read"}, Roles: []string{"reader"}},
			{Name: "writers write docs", Resource: "docs", Scopes: []string{"write"}, Roles: []string{"writer"}},
			{Name: "writers delete docs with DELETE", Resource: "docs", Scopes: []string{"delete"}, Roles: []string{"writer"}, Methods: []string{"DELETE"}},
			{Name: "auditors read reports", Resource: "reports", Scopes: []string{"read"}, Roles: []string{"auditor"}},
		},
	}},
	Organizations: []mockserver.FixtureOrganization{
		{Name: "North", Alias: "north", Roles: []string{"writer"}, Departments: []mockserver.FixtureDepartment{
			{Name: "Ops", Alias: "ops", Users: []string{"wes"}, Children: []mockserver.FixtureDepartment{
				{Name: "Night", Alias: "night", Users: []string{"wes"}},
			}},
		}},
		{Name: "South", Alias: "south", Departments: []mockserver.FixtureDepartment{
			{Name: "Desk", Alias: "desk", Users: []string{"uma"}},
		}},
	},
}}}

// e2e is one reference server and a way to get clients of it.
type e2e struct {
	t  *testing.T
	gw *mockservertest.Server
}

// startE2E starts a reference server with the corp fixture that signs
// access tokens ES256 (es256Tokens).
func startE2E(t *testing.T) *e2e {
	t.Helper()
	return &e2e{t: t, gw: mockservertest.Start(t, mockserver.WithFixture(corp), es256Tokens)}
}

// startDefaultE2E starts a reference server with the corp fixture and
// nothing else, as a user starts one: it signs access tokens RS256, which
// it checks.
func startDefaultE2E(t *testing.T) *e2e {
	t.Helper()
	e := &e2e{t: t, gw: mockservertest.Start(t, mockserver.WithFixture(corp))}
	head, _, _ := strings.Cut(e.gw.Token("corp", "uma"), ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	require.NoError(t, err)
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

// admin sends an authenticated request to the reference server's API.
func (e *e2e) admin(method, path, token, body string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.gw.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.gw.Client().Do(req)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// configure replaces the reference server's platform configuration.
func (e *e2e) configure(config string) {
	e.t.Helper()
	resp := e.admin(http.MethodPut, "/admin/config", e.gw.AdminToken(), config)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
}

var tokenKinds = []string{"Bearer", "DPoP"}

func TestE2ECheck(t *testing.T) {
	t.Parallel()
	e := startDefaultE2E(t)
	tests := []struct {
		user, resource, scope string
		want                  pep.Status
	}{
		{"uma", "docs", "read", pep.Grant},
		{"uma", "docs", "write", pep.Deny},
		{"wes", "docs", "write", pep.Grant},
		{"wes", "docs", "read", pep.Deny},
		{"wes", "docs", "delete", pep.Deny}, // needs the DELETE method in the context
		{"vic", "reports", "read", pep.Grant},
		{"vic", "docs", "read", pep.Deny},
		{"uma", "docs", "print", pep.Error},
		{"uma", "nosuch", "read", pep.Error},
	}
	for _, kind := range tokenKinds {
		clients := map[string]*pep.Client{"uma": e.client("uma", kind), "wes": e.client("wes", kind), "vic": e.client("vic", kind)}
		for _, tt := range tests {
			t.Run(kind+"/"+tt.user+"/"+tt.resource+":"+tt.scope, func(t *testing.T) {
				d, err := clients[tt.user].Check(t.Context(), tt.resource, tt.scope)
				require.NoError(t, err)
				assert.Equal(t, tt.want, d.Status)
				assert.Equal(t, tt.want == pep.Grant, d.Allowed())
				requireGatewayCause(t, d)
				assert.False(t, d.Cached)

				again, err := clients[tt.user].Check(t.Context(), tt.resource, tt.scope)
				require.NoError(t, err)
				assert.Equal(t, tt.want, again.Status)
				assert.Equal(t, tt.want != pep.Error, again.Cached, "GRANT and DENY are cached, ERROR is not")
			})
		}
	}
}

func TestE2ERequestContext(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	for _, kind := range tokenKinds {
		c := e.client("wes", kind)
		for method, want := range map[string]pep.Status{http.MethodDelete: pep.Grant, http.MethodPost: pep.Deny} {
			t.Run(kind+"/"+method, func(t *testing.T) {
				d, err := c.Check(t.Context(), "docs", "delete", pep.WithRequestContext(pep.RequestContext{
					Method: method, Path: "/docs/1", Headers: map[string]string{"X-Tenant": "north"}, Body: `{"id":1}`}))
				require.NoError(t, err)
				assert.Equal(t, want, d.Status)
			})
		}
	}
}

func TestE2ECheckMany(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	for _, kind := range tokenKinds {
		t.Run(kind, func(t *testing.T) {
			c := e.client("wes", kind)
			res, err := c.CheckMany(t.Context(), []pep.Resource{
				{Name: "docs", Scopes: []string{"write", "read", "write"}},
				{Name: "reports", Scopes: []string{"read"}},
				{Name: "docs", Scopes: []string{"print"}},
			})
			require.NoError(t, err)
			got := make([]string, 0, len(res.Decisions))
			for _, d := range res.Decisions {
				got = append(got, d.Resource+":"+d.Scope+"="+d.Status.String())
			}
			assert.Equal(t, []string{"docs:write=GRANT", "docs:read=DENY", "reports:read=DENY", "docs:print=ERROR"}, got,
				"request order, duplicates removed")
			assert.Equal(t, pep.Deny, res.Status)
			assert.False(t, res.Allowed())

			only, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "docs", Scopes: []string{"write"}}})
			require.NoError(t, err)
			assert.True(t, only.Allowed())
		})
	}
}

func TestE2EListGranted(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	perms := func(ps []pep.Permission) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			require.Equal(t, pep.Grant, p.Status)
			out = append(out, p.Resource+":"+p.Scope)
		}
		slices.Sort(out)
		return out
	}
	for _, kind := range tokenKinds {
		t.Run(kind, func(t *testing.T) {
			all, err := e.client("wes", kind).ListGranted(t.Context(), nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"docs:write"}, perms(all))

			docs, err := e.client("uma", kind).ListGranted(t.Context(), []pep.Resource{{Name: "docs"}})
			require.NoError(t, err)
			assert.Equal(t, []string{"docs:read"}, perms(docs))

			none, err := e.client("vic", kind).ListGranted(t.Context(), []pep.Resource{{Name: "docs"}})
			require.NoError(t, err)
			assert.Empty(t, none)
		})
	}
}

func TestE2EOrganizations(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	for _, kind := range tokenKinds {
		t.Run(kind, func(t *testing.T) {
			org, err := e.client("wes", kind).Organizations(t.Context())
			require.NoError(t, err)
			require.Len(t, org.Tenants, 1)
			assert.Equal(t, "North", org.Tenants[0].Name)
			assert.NotEmpty(t, org.Tenants[0].ID)
			var depts []string
			for _, d := range org.Tenants[0].Departments {
				depts = append(depts, d.Name)
			}
			assert.ElementsMatch(t, []string{"Ops", "Night"}, depts)
			assert.NotEmpty(t, org.UserID)

			org, err = e.client("vic", kind).Organizations(t.Context())
			require.NoError(t, err)
			assert.Empty(t, org.Tenants)
		})
	}
}

// TestE2ELiveAssignments: removing an assignment turns a GRANT into a DENY
// on the next gateway call with the same token.
func TestE2ELiveAssignments(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	c := e.client("wes", "Bearer")
	d, err := c.Check(t.Context(), "docs", "write")
	require.NoError(t, err)
	require.Equal(t, pep.Grant, d.Status)

	// Find North's departments and wes's id, then unassign him from both.
	admin := e.gw.Token("corp", "ada")
	var org struct{ Result struct{ ID string } }
	decode(t, e.admin(http.MethodGet, "/admin/realms/corp/organizations/alias/north", admin, ""), &org)
	wes := subject(t, e.gw.Token("corp", "wes"))
	var assignments struct {
		Results []struct{ DepartmentID string }
	}
	decode(t, e.admin(http.MethodGet, "/admin/realms/corp/organizations/users/"+wes+"/assignments", admin, ""), &assignments)
	require.Len(t, assignments.Results, 2)
	for _, a := range assignments.Results {
		resp := e.admin(http.MethodDelete, "/admin/realms/corp/organizations/"+org.Result.ID+"/departments/"+a.DepartmentID+"/users/"+wes, admin, "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}

	d, err = c.Check(t.Context(), "docs", "write", pep.NoCache())
	require.NoError(t, err)
	assert.Equal(t, pep.Deny, d.Status)
	assert.NoError(t, d.Cause, "a gateway DENY, not a fail-closed one")
}

func TestE2EStoppedServer(t *testing.T) {
	t.Parallel()
	srv, ln := gatewaytest.Listen(t)
	ref, err := mockserver.New(mockserver.WithFixture(corp), mockserver.WithIssuer(srv.URL))
	require.NoError(t, err)
	srv.Serve(ln, ref)
	token, err := ref.IssueToken("corp", "uma")
	require.NoError(t, err)
	c, err := hangguard.NewPep(srv.URL, "corp", "docs-api", pep.WithRetry(1, time.Millisecond, 2*time.Millisecond))
	require.NoError(t, err)
	c.SetToken(token)

	d, err := c.Check(t.Context(), "docs", "read")
	require.NoError(t, err)
	require.Equal(t, pep.Grant, d.Status, "granted while the server runs")

	srv.Close()
	d, err = c.Check(t.Context(), "docs", "read", pep.NoCache())
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	assert.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	_, err = c.Organizations(t.Context())
	assert.ErrorIs(t, err, pep.ErrUnavailable, "Organizations does not fail closed: it errs")
}

// TestE2EExpiredToken: a call with an expired token gets the server's 401
// as ErrUnauthorized and fires tokenExpired once, before the call returns
// (the call waits for the delivery until its deadline, hangguard.Timeout here);
// the handler's SetToken from inside the delivery serves the next call.
func TestE2EExpiredToken(t *testing.T) {
	t.Parallel()
	for _, kind := range tokenKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := startE2E(t)
			var expired atomic.Int32
			var refreshed string
			c, err := hangguard.NewPep(e.gw.URL, "corp", "docs-api")
			require.NoError(t, err)
			c.Subscribe(func(ev events.Event) {
				if ev.Kind == events.TokenExpired {
					expired.Add(1)
					assert.Equal(t, kind, ev.TokenType)
					refreshed = e.gw.Token("corp", "uma")
					c.SetToken(refreshed) // the usual answer, from inside the handler
				}
			})
			stale := []mockserver.TokenOption{mockserver.TokenLifetime(-time.Minute)}
			if kind == "DPoP" {
				signer, err := dpop.GenerateKey()
				require.NoError(t, err)
				c.SetDPoPToken(e.gw.Token("corp", "uma", append(stale, mockserver.TokenDPoPBinding(signer.Thumbprint()))...), signer)
			} else {
				c.SetToken(e.gw.Token("corp", "uma", stale...))
			}

			d, err := c.Check(t.Context(), "docs", "read")
			require.ErrorIs(t, err, pep.ErrUnauthorized, "the server's refusal, not a DENY failed closed (Cause: %v)", d.Cause)
			assert.False(t, d.Allowed())
			assert.NotContains(t, err.Error(), refreshed)
			assert.Equal(t, int32(1), expired.Load())

			d, err = c.Check(t.Context(), "docs", "read")
			require.NoError(t, err, "the next call carries the refreshed token")
			assert.Equal(t, pep.Grant, d.Status)
		})
	}
}

// TestE2EDPoPNonce: with nonces required, the first proof is refused with a
// use_dpop_nonce challenge, the client answers it once, and no event fires.
func TestE2EDPoPNonce(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	e.configure(`{"dpopNonceRequired": true}`)
	var fired atomic.Int32
	c := e.client("uma", "DPoP", pep.WithEventHandler(func(ev events.Event) {
		if ev.Kind != events.TokenSet {
			fired.Add(1)
		}
	}))
	for range 3 {
		d, err := c.Check(t.Context(), "docs", "read", pep.NoCache())
		require.NoError(t, err)
		assert.Equal(t, pep.Grant, d.Status)
	}
	assert.Zero(t, fired.Load())
	st := c.Stats()
	assert.Equal(t, uint64(4), st.GatewayRequests, "one nonce challenge, then the kept nonce serves every later call")
}

// subject returns a JWT's sub claim without verifying it (the server did).
func subject(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims struct{ Sub string }
	require.NoError(t, json.Unmarshal(payload, &claims))
	return claims.Sub
}

func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}
