package mockserver

import (
	"crypto"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/issuer"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// authFixture has a realm admin, a plain user and a second realm.
func authFixture() Fixture {
	return Fixture{
		Realms: []FixtureRealm{
			{
				Name:   "acme",
				Roles:  []FixtureRole{{Name: "viewer"}},
				Groups: []FixtureGroup{{Name: "admins", Roles: []string{"realm-admin"}}},
				Users: []FixtureUser{
					{Username: "alice", Password: "alice", Roles: []string{"realm-admin"}},
					{Username: "bob", Password: "bob", Roles: []string{"viewer"}},
					{Username: "dora", Password: "dora", Groups: []string{"admins"}},
				},
				Clients: []FixtureClient{{ClientID: "spa", Public: true}},
			},
			{Name: "globex", Users: []FixtureUser{{Username: "gina", Roles: []string{"realm-admin"}}}},
		},
		PlatformAdmins: []FixturePlatformAdmin{{ClientID: "ops", Secret: "ops-secret"}},
	}
}

// mustNew is New, failing the test on an error.
func mustNew(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return testkit.Must(New(opts...))(t)
}

// mustIssue is s.IssueToken, failing the test on an error.
func mustIssue(t testing.TB, s *Server, realm, username string, opts ...TokenOption) string {
	t.Helper()
	return testkit.Must(s.IssueToken(realm, username, opts...))(t)
}

// newRequest is a client request with the test's context, failing the
// test on an error.
func newRequest(t testing.TB, method, url string, body io.Reader) *http.Request {
	t.Helper()
	return testkit.Must(http.NewRequestWithContext(t.Context(), method, url, body))(t)
}

// authHarness serves probe routes wrapped by the three protections.
type authHarness struct {
	s   *Server
	url string
	now atomic.Int64 // unix nanoseconds of the server's clock
}

func newAuthHarness(t *testing.T) *authHarness {
	t.Helper()
	h := &authHarness{}
	h.now.Store(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, h.now.Load()).UTC() }
	mux := http.NewServeMux()
	ts := httptest.NewUnstartedServer(mux)
	url := "http://" + ts.Listener.Addr().String()
	s := mustNew(t, WithFixture(authFixture()), WithIssuer(url), WithClock(clock), WithAdminSecret("boot"))
	h.s, h.url = s, url
	mux.Handle("POST /probe/{realm}/admin", s.realmAdmin("organization.create", func(w http.ResponseWriter, r *http.Request, c *caller) {
		c.resourceID = c.subject // an id the store holds (the caller's user): kept
		writeResult(w, http.StatusCreated, map[string]string{"subject": c.subject})
	}))
	mux.Handle("POST /probe/{realm}/fail", s.realmAdmin("organization.delete", func(w http.ResponseWriter, r *http.Request, c *caller) {
		s.writeErr(w, store.NotFound("organization %q", "x"))
	}))
	mux.Handle("GET /probe/{realm}/read", s.realmAdmin("", func(w http.ResponseWriter, r *http.Request, c *caller) {
		writeResult(w, http.StatusOK, map[string]string{"subject": c.subject})
	}))
	mux.Handle("GET /probe/{realm}/any", s.authenticated(func(w http.ResponseWriter, r *http.Request, c *caller) {
		writeResult(w, http.StatusOK, map[string]string{"subject": c.subject, "org": c.org})
	}))
	mux.Handle("POST /probe/platform", s.platformAdmin("config.update", func(w http.ResponseWriter, r *http.Request, c *caller) {
		writeResult(w, http.StatusOK, map[string]string{})
	}))
	mux.Handle("/", s) // the server's own routes
	ts.Start()
	t.Cleanup(ts.Close)
	return h
}

func (h *authHarness) token(t *testing.T, realm, user string, opts ...TokenOption) string {
	t.Helper()
	return testkit.Must(h.s.IssueToken(realm, user, opts...))(t)
}

func (h *authHarness) do(t *testing.T, method, path, authz string) (*http.Response, string) {
	t.Helper()
	req := newRequest(t, method, h.url+path, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp := testkit.Must(http.DefaultClient.Do(req))(t)
	defer resp.Body.Close()
	b := testkit.Must(io.ReadAll(resp.Body))(t)
	return resp, string(b)
}

func TestAuthRefusesBadTokens(t *testing.T) {
	h := newAuthHarness(t)
	alice := h.token(t, "acme", "alice")
	expired := h.token(t, "acme", "alice", TokenLifetime(-time.Second))
	gina := h.token(t, "globex", "gina")
	notYet := h.signed(t, "acme", "alice", func(c *issuer.Claims) { c.NotBefore = jwt.NewNumericDate(h.clock().Add(time.Hour)) })

	// A token minted by a server with another issuer base but the same key
	// cannot be made here; a token signed for acme by another server is.
	other := mustNew(t, WithFixture(authFixture()), WithIssuer("http://elsewhere.test"))
	foreign := mustIssue(t, other, "acme", "alice")
	wrongIss, err := func() (string, error) {
		s2 := *h.s
		s2.issuer = "http://elsewhere.test"
		return s2.IssueToken("acme", "alice")
	}()
	require.NoError(t, err)

	cases := []struct {
		name, path, authz, want string
	}{
		{"missing token", "/probe/acme/any", "", "Bearer realm=\"acme\"\nDPoP realm=\"acme\", algs=\"ES256 ES384 PS256 RS256 EdDSA Ed25519\""},
		{"unknown scheme", "/probe/acme/any", "Basic abc", "Bearer realm=\"acme\"\nDPoP realm=\"acme\", algs="},
		{"missing token on a platform route", "/probe/platform", "", "Bearer realm=\"master\"\nDPoP realm=\"master\", algs="},
		{"garbage", "/probe/acme/any", "Bearer abc.def.ghi", `error="invalid_token"`},
		{"expired", "/probe/acme/any", "Bearer " + expired, `error="invalid_token", error_description="invalid token: token expired"`},
		{"not yet valid", "/probe/acme/any", "Bearer " + notYet, `error="invalid_token", error_description="invalid token: token not yet valid"`},
		{"wrong issuer", "/probe/acme/any", "Bearer " + wrongIss, `error_description="invalid token: token issued by another issuer"`},
		{"other server's key", "/probe/acme/any", "Bearer " + foreign, `error="invalid_token"`},
		{"other realm", "/probe/acme/any", "Bearer " + gina, `error="invalid_token"`},
		{"other realm on admin route", "/probe/acme/read", "Bearer " + gina, `error="invalid_token"`},
		{"unknown realm", "/probe/nowhere/any", "Bearer " + alice, `error_description="invalid token: realm not found or decommissioned"`},
		{"realm token on platform route", "/probe/platform", "Bearer " + alice, `error="invalid_token"`},
		{"bearer scheme token sent as DPoP", "/probe/acme/any", "DPoP " + alice, `DPoP realm="acme"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodGet
			if strings.HasSuffix(tc.path, "platform") {
				method = http.MethodPost
			}
			resp, body := h.do(t, method, tc.path, tc.authz)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
			require.Contains(t, strings.Join(resp.Header.Values("WWW-Authenticate"), "\n"), tc.want)
			require.Contains(t, body, `"error":"Unauthorized"`)
			require.NotContains(t, body, "eyJ", "the body must not echo the token")
		})
	}
}

func TestAuthDecommissionedRealm(t *testing.T) {
	h := newAuthHarness(t)
	key, kid := h.s.mustKey(t)
	r := testkit.Must(h.s.store.ProvisionTenant("initech", "free", "admin@initech.test", "pw", key, kid))(t)
	tok := h.token(t, r.Name, "admin@initech.test")
	resp, _ := h.do(t, http.MethodGet, "/probe/initech/read", "Bearer "+tok)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	_, ok := h.s.auth.verified.realms.lookup("initech")
	require.True(t, ok, "initech's token is remembered")

	resp, body := h.do(t, http.MethodDelete, "/admin/tenants/"+r.TenantID(), "Bearer "+h.token(t, "master", "service-account-ops"))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	_, ok = h.s.auth.verified.realms.lookup("initech")
	require.False(t, ok, "a decommissioned realm's verified tokens are forgotten")
	require.Equal(t, remembered(h.s.auth.verified), h.s.auth.verified.total.Load(), "and given back to the budget")
	resp, _ = h.do(t, http.MethodGet, "/probe/initech/read", "Bearer "+tok)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	_, err := h.s.IssueToken("initech", "admin@initech.test")
	require.Error(t, err)
}

func TestAuthPermissionsAndAudit(t *testing.T) {
	h := newAuthHarness(t)
	alice := h.token(t, "acme", "alice")
	bob := h.token(t, "acme", "bob")
	dora := h.token(t, "acme", "dora") // realm-admin through a group
	admin := h.token(t, "master", "service-account-ops")
	boot := h.token(t, "master", "service-account-platform-admin")

	cases := []struct {
		name, method, path, token string
		want                      int
	}{
		{"realm admin reads", http.MethodGet, "/probe/acme/read", alice, http.StatusOK},
		{"group realm admin reads", http.MethodGet, "/probe/acme/read", dora, http.StatusOK},
		{"plain user may not read", http.MethodGet, "/probe/acme/read", bob, http.StatusForbidden},
		{"plain user is authenticated", http.MethodGet, "/probe/acme/any", bob, http.StatusOK},
		{"realm admin creates", http.MethodPost, "/probe/acme/admin", alice, http.StatusCreated},
		{"plain user may not create", http.MethodPost, "/probe/acme/admin", bob, http.StatusForbidden},
		{"handler failure", http.MethodPost, "/probe/acme/fail", alice, http.StatusNotFound},
		{"platform admin", http.MethodPost, "/probe/platform", admin, http.StatusOK},
		{"bootstrap platform admin", http.MethodPost, "/probe/platform", boot, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.do(t, tc.method, tc.path, "Bearer "+tc.token)
			require.Equal(t, tc.want, resp.StatusCode, body)
		})
	}

	entries := auditEntries(h.s, store.AuditFilter{})
	ids := map[string]string{}
	require.NoError(t, h.s.store.Read("acme", func(rm *store.Realm) error {
		ids["alice"] = rm.UserByName["alice"]
		ids["bob"] = rm.UserByName["bob"]
		return nil
	}))
	require.NoError(t, h.s.store.Read("master", func(rm *store.Realm) error {
		ids["ops"] = rm.UserByName["service-account-ops"]
		ids["boot"] = rm.UserByName["service-account-platform-admin"]
		return nil
	}))
	type row struct{ actor, action, tenant, typ, resID, outcome string }
	var got []row
	for _, e := range entries {
		got = append(got, row{e.ActorID, e.Action, e.TenantID, e.ResourceType, e.ResourceID, e.Outcome})
	}
	require.Equal(t, []row{ // newest first
		{ids["boot"], "config.update", "master", "config", "", "SUCCESS"},
		{ids["ops"], "config.update", "master", "config", "", "SUCCESS"},
		{ids["alice"], "organization.delete", "acme", "organization", "", "FAILURE"},
		{ids["bob"], "organization.create", "acme", "organization", "", "FAILURE"},
		{ids["alice"], "organization.create", "acme", "organization", ids["alice"], "SUCCESS"},
	}, got)
}

// TestAuthChecksNotBeforeOnEveryUse: a token whose nbf lies ahead is
// refused, accepted once the clock reaches it, and refused again from the
// verified-token cache if the clock goes back before it; a token verified
// and remembered is refused once the server's clock passes its exp (the
// rows of TestAuthClock).
func TestAuthChecksNotBeforeOnEveryUse(t *testing.T) {
	h := newAuthHarness(t)
	exp := h.token(t, "acme", "alice", TokenLifetime(time.Minute))
	resp, _ := h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+exp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	h.now.Add(int64(time.Minute)) // the store clock now says expired
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+exp)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	tok := h.signed(t, "acme", "alice", func(c *issuer.Claims) { c.NotBefore = jwt.NewNumericDate(h.clock().Add(time.Minute)) })
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	h.now.Add(int64(2 * time.Minute))
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	h.now.Add(-int64(2 * time.Minute))
	resp, _ = h.do(t, http.MethodGet, "/probe/acme/any", "Bearer "+tok)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// TestVerifiedTokensEvictOneAtATime: a full cache forgets its least recently
// used token only; it used to forget every token at once.
func TestVerifiedTokensEvictOneAtATime(t *testing.T) {
	t.Parallel()
	const budget = 64
	v := newVerifiedTokens(budget)
	c := claimsOf("acme")
	for i := range budget + 1 {
		v.add("acme", tokenOf(i), "k", c)
	}
	require.EqualValues(t, budget, v.total.Load())
	_, ok := v.get("acme", tokenOf(0), "k", "")
	require.False(t, ok, "the least recently used token is forgotten")
	for _, i := range []int{1, budget / 2, budget} {
		_, ok := v.get("acme", tokenOf(i), "k", "")
		require.True(t, ok, "token %d is still cached", i)
	}
	_, ok = v.get("acme", tokenOf(1), "other-kid", "")
	require.False(t, ok, "a token verified with another key does not count")
	_, ok = v.get("globex", tokenOf(1), "k", "")
	require.False(t, ok, "a token verified in another realm does not count")
}

// TestVerifiedTokensCompareTheWholeToken: the cache finds a token by a
// hash of it, and a token that hashes like a remembered one is not taken
// for it: every hash collides here, and only the token remembered is
// found, never another one, however alike.
func TestVerifiedTokensCompareTheWholeToken(t *testing.T) {
	t.Parallel()
	v := newVerifiedTokens(64)
	v.hash = func(string) uint64 { return 42 }
	c := claimsOf("acme")
	v.add("acme", "header.claims.signature", "k", c)
	got, ok := v.get("acme", "header.claims.signature", "k", "")
	require.True(t, ok)
	require.Same(t, c, got)
	for _, other := range []string{"header.claims.signaturf", "header.forged.signature", "header.claims.signatur", ""} {
		_, ok := v.get("acme", other, "k", "")
		require.False(t, ok, "%q is not the token remembered", other)
	}
	v.add("acme", "another.token.altogether", "k", claimsOf("acme"))
	_, ok = v.get("acme", "another.token.altogether", "k", "")
	require.False(t, ok, "a colliding token is not remembered in another's place")
	v.remove("acme", "another.token.altogether")
	_, ok = v.get("acme", "header.claims.signature", "k", "")
	require.True(t, ok, "removing a colliding token leaves the one remembered")
	require.EqualValues(t, 1, v.total.Load())
}

// TestVerifiedTokensShareABudgetFairly: the realms' caches hold the budget
// in all, however many realms there are, and a realm within its fair share
// of the budget keeps its tokens while other realms' callers present more
// distinct tokens than the budget holds.
func TestVerifiedTokensShareABudgetFairly(t *testing.T) {
	t.Parallel()
	const budget = 60
	v := newVerifiedTokens(budget)
	add := func(realm string, from, n int) {
		c := claimsOf(realm)
		for i := from; i < from+n; i++ {
			v.add(realm, tokenOf(i), "k", c)
			require.LessOrEqual(t, v.total.Load(), int64(budget), "after %s's token %d", realm, i)
		}
	}
	cached := func(realm string, from, n int) (k int) {
		for i := from; i < from+n; i++ {
			if _, ok := v.get(realm, tokenOf(i), "k", ""); ok {
				k++
			}
		}
		return k
	}
	add("acme", 0, 10)
	add("globex", 1000, 10*budget) // a flood, in a second realm
	require.Equal(t, 10, cached("acme", 0, 10), "acme holds less than its fair share (30)")
	require.Equal(t, budget-10, cached("globex", 1000+10*budget-(budget-10), budget-10),
		"globex keeps its most recent tokens in the rest of the budget")

	for r := range 100 { // many realms: the budget still holds
		add(fmt.Sprint("tenant-", r), 5000+10*r, 10)
	}
	require.LessOrEqual(t, v.total.Load(), int64(budget))
	require.Equal(t, remembered(v), v.total.Load(), "the count is the caches' sizes")

	v.forget("globex")
	_, ok := v.realms.lookup("globex")
	require.False(t, ok)
	require.Equal(t, remembered(v), v.total.Load(), "a forgotten realm's entries go back to the budget")
}

// remembered counts the entries of every realm's verified-token cache.
func remembered(v *verifiedTokens) int64 {
	var n int64
	v.realms.each(func(_ string, l *lru[uint64, verifiedToken]) { n += int64(l.len()) })
	return n
}

// tokenOf is a made-up token number i.
func tokenOf(i int) string { return "token-" + strconv.Itoa(i) }

// claimsOf are made-up claims of a token of realm, issued under the base
// URL "" (what the verified-token cache tests look tokens up with).
func claimsOf(realm string) *issuer.Claims {
	return &issuer.Claims{Claims: jwt.Claims{Issuer: issuer.RealmIssuer("", realm)}}
}

// clock returns the harness server's current time.
func (h *authHarness) clock() time.Time { return time.Unix(0, h.now.Load()).UTC() }

// signed mints a token of realm for user with claims changed by edit,
// signed by the realm's key.
func (h *authHarness) signed(t *testing.T, realm, user string, edit func(*issuer.Claims)) string {
	t.Helper()
	raw := h.token(t, realm, user)
	rm, ok := h.s.store.Lookup(realm)
	require.True(t, ok)
	key, kid := testkit.Must2(h.s.accessKey(rm))(t)
	tok := testkit.Must(jwt.ParseSigned(raw, []jose.SignatureAlgorithm{issuer.AlgorithmOf(key.Public())}))(t)
	var c issuer.Claims
	require.NoError(t, tok.Claims(key.Public(), &c))
	edit(&c)
	return testkit.Must(issuer.Sign(key, kid, &c))(t)
}

// mustKey returns a fresh signing key for a test realm.
func (s *Server) mustKey(t *testing.T) (crypto.Signer, string) {
	t.Helper()
	k, kid := testkit.Must2(issuer.GenerateKey())(t)
	return k, kid
}

// auditEntries returns every audit entry matching f, newest first.
func auditEntries(s *Server, f store.AuditFilter) []store.AuditEntry {
	entries, _ := s.store.AuditPage(f, 0, math.MaxInt)
	return entries
}
