package mockserver

import (
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// uiFixture is a realm with an administrator (alice), a user without realm
// management (bob), and names an attacker chose: every one must reach the
// page as text, never as markup.
func uiFixture() Fixture {
	return Fixture{Realms: []FixtureRealm{{
		Name:   "acme",
		Roles:  []FixtureRole{{Name: "viewer"}, {Name: "clerk"}, {Name: `<b>bold</b>-role`}},
		Groups: []FixtureGroup{{Name: "support", Roles: []string{"viewer"}}},
		Users: []FixtureUser{
			{Username: "alice", Password: "alice-pw", Email: "alice@acme.test", Roles: []string{"realm-admin"}},
			{Username: "bob", Password: "bob-pw", Email: "bob@acme.test", Groups: []string{"support"}},
			{Username: `eve<script>alert(1)</script>`, Password: "eve-pw", Roles: []string{`<b>bold</b>-role`}},
		},
		Clients: []FixtureClient{{
			ClientID: "orders-api", Secret: "s",
			Resources: []FixtureResource{{Name: "orders", Scopes: []string{"read", "write", "delete"}}},
			Permissions: []FixturePermission{
				{Name: "viewers read orders", Resource: "orders", Scopes: []string{"read"}, Roles: []string{"viewer"}},
				{Name: "clerks delete orders", Resource: "orders", Scopes: []string{"delete"}, Roles: []string{"clerk"}, Methods: []string{"DELETE"}},
				{Name: `"><img src=x onerror=alert(2)>`, Resource: "orders", Scopes: []string{"write"}, Users: []string{`eve<script>alert(1)</script>`}},
			},
		}},
		Organizations: []FixtureOrganization{{
			Name: `Acme <i>EU</i>`, Alias: "acme-eu", Description: `</p><script>alert(3)</script>`, Roles: []string{"clerk"},
			Departments: []FixtureDepartment{
				{Name: "Sales", Alias: "sales", Users: []string{"bob"},
					Children: []FixtureDepartment{{Name: "Inside Sales", Alias: "inside-sales", Users: []string{"alice"}}}},
				{Name: `Fin"ance<svg onload=alert(4)>`, Alias: "finance", Users: []string{`eve<script>alert(1)</script>`}},
			},
		}},
	}, {
		Name:  "other",
		Users: []FixtureUser{{Username: "alice", Password: "alice-pw", Roles: []string{"realm-admin"}}},
	}}}
}

// uiServer is a reference server with the web UI on, over real HTTP, with
// a clock the test moves.
type uiServer struct {
	t   *testing.T
	s   *Server
	url string
	now atomic.Int64
}

func newUIServer(t *testing.T, opts ...Option) *uiServer {
	t.Helper()
	u := &uiServer{t: t}
	u.now.Store(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, u.now.Load()).UTC() }
	s := mustNew(t, append([]Option{WithFixture(uiFixture()), WithClock(clock), WithWebUI(), es256Tokens}, opts...)...)
	ts := testkit.Serve(t, s)
	u.s, u.url = s, ts.URL
	return u
}

// advance moves the server's clock.
func (u *uiServer) advance(d time.Duration) { u.now.Add(int64(d)) }

// browser returns a client that keeps cookies and does not follow
// redirects, as a test of each answer needs.
func (u *uiServer) browser() *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(u.t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// uiAnswer is an answer read whole.
type uiAnswer struct {
	status int
	header http.Header
	body   string
}

// do sends method path with the form (POST) as a browser would, Accept
// text/html, and reads the answer.
func (u *uiServer) do(c *http.Client, method, path string, form url.Values, hdr ...string) uiAnswer {
	u.t.Helper()
	h := http.Header{"Accept": {"text/html,application/xhtml+xml"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	if form == nil {
		return u.send(u.t, c, method, path, "", "", h)
	}
	return u.send(u.t, c, method, path, "application/x-www-form-urlencoded", form.Encode(), h)
}

// send sends method path with c, with body of Content-Type ctype (none
// when empty) and the headers of h, and reads the answer.
func (u *uiServer) send(t *testing.T, c *http.Client, method, path, ctype, body string, h http.Header) uiAnswer {
	t.Helper()
	req := newRequest(t, method, u.url+path, strings.NewReader(body))
	maps.Copy(req.Header, h)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp := testkit.Must(c.Do(req))(t)
	defer resp.Body.Close()
	b := testkit.Must(io.ReadAll(resp.Body))(t)
	return uiAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// login signs c in to realm as username and returns the answer.
func (u *uiServer) login(c *http.Client, realm, username, password string) uiAnswer {
	u.t.Helper()
	return u.do(c, http.MethodPost, "/ui/realms/"+realm+"/login", url.Values{"username": {username}, "password": {password}})
}

// admin returns a browser signed in to acme as alice.
func (u *uiServer) admin() *http.Client {
	u.t.Helper()
	c := u.browser()
	p := u.login(c, "acme", "alice", "alice-pw")
	require.Equal(u.t, http.StatusSeeOther, p.status, p.body)
	require.Equal(u.t, "/ui/realms/acme/home", p.header.Get("Location"))
	return c
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the forms of the page at path.
func (u *uiServer) csrf(c *http.Client, path string) string {
	u.t.Helper()
	p := u.do(c, http.MethodGet, path, nil)
	require.Equal(u.t, http.StatusOK, p.status, p.body)
	m := csrfInput.FindStringSubmatch(p.body)
	require.NotNil(u.t, m, "no CSRF token on %s", path)
	return m[1]
}

// id returns the id of the named object of realm acme.
func (u *uiServer) id(kind, name string) string {
	u.t.Helper()
	var id string
	require.NoError(u.t, u.s.store.Read("acme", func(rm *store.Realm) error {
		switch kind {
		case "user":
			id = rm.UserByName[name]
		case "org":
			id = rm.OrgByAlias[name]
		}
		return nil
	}))
	require.NotEmpty(u.t, id, "%s %s", kind, name)
	return id
}

// uiPages are the pages that need a session, by method and path.
func (u *uiServer) pages() []struct{ method, path string } {
	return []struct{ method, path string }{
		{http.MethodGet, "/ui/realms/acme/home"},
		{http.MethodGet, "/ui/realms/acme/organizations/" + u.id("org", "acme-eu")},
		{http.MethodGet, "/ui/realms/acme/users/" + u.id("user", "bob")},
		{http.MethodGet, "/ui/realms/acme/clients/orders-api"},
		{http.MethodGet, "/ui/realms/acme/evaluate"},
		{http.MethodPost, "/ui/realms/acme/evaluate"},
		{http.MethodPost, "/ui/realms/acme/logout"},
	}
}

// TestWebUIIsOffByDefault: without WithWebUI no /ui/ route exists.
func TestWebUIIsOffByDefault(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithFixture(uiFixture()))
	ts := testkit.Serve(t, s)
	for _, path := range []string{"/ui/", "/ui/realms/acme/home", "/ui/realms/acme/login", "/ui/style.css"} {
		t.Run(path, func(t *testing.T) {
			resp := testkit.Must(ts.Client().Get(ts.URL + path))(t)
			resp.Body.Close()
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
		})
	}
}

// TestWebUIPagesWithoutSessionRedirectToLogin: every page answers a
// request without a valid session (none, forged, of another realm,
// expired, logged out) with a redirect to the realm's login page, and shows
// nothing of the realm. A session lasts 30 minutes by the server's clock,
// however the process spent them (a process frozen for an hour wakes to a
// refused session). A logout clears the cookie and refuses a copy of it
// kept elsewhere, also once the logout is forgotten (its session expired)
// and the clock then steps back (the logouts share the revoked tokens'
// watermark, revocation.go).
func TestWebUIPagesWithoutSessionRedirectToLogin(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	home := "/ui/realms/acme/home"
	base, _ := url.Parse(u.url + home)
	requireRefused := func(t *testing.T, c *http.Client, msg string) {
		t.Helper()
		p := u.do(c, http.MethodGet, home, nil)
		require.Equal(t, http.StatusSeeOther, p.status, msg)
		require.Equal(t, "/ui/realms/acme/login", p.header.Get("Location"))
	}
	// withCookie is a browser that sends the session cookie value to acme.
	withCookie := func(v string) *http.Client {
		c := u.browser()
		c.Jar.SetCookies(base, []*http.Cookie{{Name: sessionCookie, Value: v, Path: "/ui/realms/acme"}})
		return c
	}
	logout := func(t *testing.T, c *http.Client) string {
		stolen := c.Jar.Cookies(base)[0].Value
		csrf := u.csrf(c, home)
		p := u.do(c, http.MethodPost, "/ui/realms/acme/logout", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, p.status)
		require.Equal(t, "/ui/realms/acme/login", p.header.Get("Location"))
		require.Empty(t, c.Jar.Cookies(base))
		return stolen
	}
	for _, pg := range u.pages() {
		t.Run("no cookie "+pg.method+" "+pg.path, func(t *testing.T) {
			p := u.do(u.browser(), pg.method, pg.path, url.Values{})
			require.Equal(t, http.StatusSeeOther, p.status)
			require.Equal(t, "/ui/realms/acme/login", p.header.Get("Location"))
			require.NotContains(t, p.body, "Sales")
		})
	}
	t.Run("forged cookie", func(t *testing.T) {
		// A cookie of the right shape whose signature is not the server's.
		v := u.admin().Jar.Cookies(base)[0].Value
		requireRefused(t, withCookie(v[:strings.LastIndex(v, ".")+1]+strings.Repeat("A", len(v)-strings.LastIndex(v, ".")-1)), "")
	})
	t.Run("another realm's session", func(t *testing.T) {
		c := u.browser()
		require.Equal(t, http.StatusSeeOther, u.login(c, "other", "alice", "alice-pw").status)
		other, _ := url.Parse(u.url + "/ui/realms/other/home")
		v := c.Jar.Cookies(other)[0].Value
		requireRefused(t, withCookie(v), "") // the same cookie, sent to acme's pages
		// The user ids of two realms differ, which refuses it too; the
		// session itself names its realm, which refuses it whatever the
		// ids.
		_, ok := u.s.ui.parse(v, "acme", time.Unix(0, u.now.Load()))
		require.False(t, ok, "a session of realm other is valid in acme")
	})
	t.Run("logged out", func(t *testing.T) {
		requireRefused(t, withCookie(logout(t, u.admin())), "")
	})
	t.Run("TestWebUISessionExpiresByTheServerClock", func(t *testing.T) {
		c := u.admin()
		u.advance(sessionLifetime - time.Second)
		require.Equal(t, http.StatusOK, u.do(c, http.MethodGet, home, nil).status)
		u.advance(time.Hour)
		requireRefused(t, c, "")
	})
	t.Run("TestWebUILoggedOutSessionStaysRefusedWhenTheClockStepsBack", func(t *testing.T) {
		stolen := logout(t, u.admin())
		// The clock runs past the session's expiry; another logout forgets
		// the first. Then the clock is corrected back by two minutes.
		u.advance(sessionLifetime + time.Minute)
		logout(t, u.admin())
		u.advance(-2 * time.Minute)
		requireRefused(t, withCookie(stolen), "a logged-out session signs in again after the clock stepped back")
	})
}

// TestWebUIPagesRefuseUsersWithoutRealmManagement: a user without realm
// management cannot sign in (403, no cookie), and a session whose user
// lost realm management since gets 403 on every page.
func TestWebUIPagesRefuseUsersWithoutRealmManagement(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	t.Run("login", func(t *testing.T) {
		p := u.login(u.browser(), "acme", "bob", "bob-pw")
		require.Equal(t, http.StatusForbidden, p.status)
		require.Contains(t, p.body, "lacks realm management")
		require.Empty(t, p.header.Values("Set-Cookie"))
	})
	c := u.admin()
	csrf := u.csrf(c, "/ui/realms/acme/home")
	// alice loses realm-admin while signed in.
	require.NoError(t, u.s.store.Write("acme", func(rm *store.Realm) error {
		delete(rm.Users[rm.UserByName["alice"]].RoleIDs, rm.RoleByName[store.RoleRealmAdmin])
		return nil
	}))
	for _, pg := range u.pages() {
		if strings.HasSuffix(pg.path, "/logout") {
			continue // signing out needs no realm management: TestWebUILogoutWithoutRealmManagement
		}
		t.Run(pg.method+" "+pg.path, func(t *testing.T) {
			p := u.do(c, pg.method, pg.path, url.Values{"csrf": {csrf}})
			require.Equal(t, http.StatusForbidden, p.status)
			require.Contains(t, p.body, "lacks realm management")
			require.NotContains(t, p.body, "Inside Sales")
			require.NotContains(t, p.body, "viewers read orders")
		})
	}
}

// TestWebUILoginFailureStoresNothing: a wrong password, an unknown user
// and a service account are all 401 with the form again, and set no
// cookie; the server keeps no session for any login.
func TestWebUILoginFailureStoresNothing(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	for _, tc := range []struct{ name, user, pw string }{
		{"wrong password", "alice", "nope"},
		{"unknown user", "mallory", "alice-pw"},
		{"empty password", "alice", ""},
		{"service account", "service-account-orders-api", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := u.login(u.browser(), "acme", tc.user, tc.pw)
			require.Equal(t, http.StatusUnauthorized, p.status)
			require.Contains(t, p.body, "Invalid username or password.")
			require.Empty(t, p.header.Values("Set-Cookie"))
		})
	}
}

// TestWebUISessionCookie: the session cookie is HttpOnly, SameSite=Strict,
// scoped to the realm's pages, and Secure exactly when the UI is served
// over https.
func TestWebUISessionCookie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opts   []Option
		secure bool
	}{
		{"http", nil, false},
		{"https public URL", []Option{WithIssuer("https://auth.example.test")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUIServer(t, tc.opts...)
			p := u.login(u.browser(), "acme", "alice", "alice-pw")
			require.Equal(t, http.StatusSeeOther, p.status)
			cookies := (&http.Response{Header: p.header}).Cookies()
			require.Len(t, cookies, 1)
			ck := cookies[0]
			assert.Equal(t, sessionCookie, ck.Name)
			assert.True(t, ck.HttpOnly)
			assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
			assert.Equal(t, "/ui/realms/acme", ck.Path)
			assert.Equal(t, tc.secure, ck.Secure)
			assert.Equal(t, int(sessionLifetime/time.Second), ck.MaxAge)
		})
	}
	t.Run("tls", func(t *testing.T) {
		s := mustNew(t, WithFixture(uiFixture()), WithWebUI())
		ts := httptest.NewTLSServer(s)
		t.Cleanup(ts.Close)
		c := ts.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp := testkit.Must(c.PostForm(ts.URL+"/ui/realms/acme/login", url.Values{"username": {"alice"}, "password": {"alice-pw"}}))(t)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Len(t, resp.Cookies(), 1)
		assert.True(t, resp.Cookies()[0].Secure)
	})
}

// TestWebUIFormsNeedTheSessionsCSRFToken: a POST of a signed-in browser
// without the session's CSRF token, or from another origin, is refused
// with 403 and changes nothing: the session still works.
func TestWebUIFormsNeedTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	c := u.admin()
	csrf := u.csrf(c, "/ui/realms/acme/home")
	other := u.browser()
	require.Equal(t, http.StatusSeeOther, u.login(other, "acme", "alice", "alice-pw").status)
	otherCSRF := u.csrf(other, "/ui/realms/acme/home")
	require.NotEqual(t, csrf, otherCSRF)
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  []string
	}{
		{"no token", url.Values{}, nil},
		{"empty token", url.Values{"csrf": {""}}, nil},
		{"another session's token", url.Values{"csrf": {otherCSRF}}, nil},
		{"cross-site", url.Values{"csrf": {csrf}}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"other origin", url.Values{"csrf": {csrf}}, []string{"Origin", "https://evil.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := u.do(c, http.MethodPost, "/ui/realms/acme/logout", tc.form, tc.hdr...)
			require.Equal(t, http.StatusForbidden, p.status, p.body)
			require.Equal(t, http.StatusOK, u.do(c, http.MethodGet, "/ui/realms/acme/home", nil).status)
		})
	}
	t.Run("cross-site login", func(t *testing.T) {
		p := u.do(u.browser(), http.MethodPost, "/ui/realms/acme/login",
			url.Values{"username": {"alice"}, "password": {"alice-pw"}}, "Sec-Fetch-Site", "cross-site")
		require.Equal(t, http.StatusForbidden, p.status)
		require.Empty(t, p.header.Values("Set-Cookie"))
	})
}

// TestWebUIPages: what the pages show an administrator, row by row on one
// server (each row is the test of its name before it).
func TestWebUIPages(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	c := u.admin()
	for _, tc := range []struct {
		name  string
		check func(t *testing.T)
	}{
		// TestWebUIEscapesWhatTheRealmHolds: names, descriptions and usernames
		// chosen by whoever wrote the realm reach every page as text.
		{"TestWebUIEscapesWhatTheRealmHolds", func(t *testing.T) {
			for _, path := range []string{
				"/ui/realms/acme/home",
				"/ui/realms/acme/organizations/" + u.id("org", "acme-eu"),
				"/ui/realms/acme/users/" + u.id("user", `eve<script>alert(1)</script>`),
				"/ui/realms/acme/clients/orders-api",
				"/ui/realms/acme/evaluate",
			} {
				t.Run(path, func(t *testing.T) {
					p := u.do(c, http.MethodGet, path, nil)
					require.Equal(t, http.StatusOK, p.status, p.body)
					for _, raw := range []string{"<script>alert", "<img src=x", "<svg onload", "<i>EU</i>", "<b>bold</b>"} {
						require.NotContains(t, p.body, raw)
					}
					require.Equal(t, "text/html; charset=utf-8", p.header.Get("Content-Type"))
					require.Contains(t, p.header.Get("Content-Security-Policy"), "default-src 'none'")
					require.Equal(t, "no-store", p.header.Get("Cache-Control"))
				})
			}
			p := u.do(c, http.MethodGet, "/ui/realms/acme/organizations/"+u.id("org", "acme-eu"), nil)
			require.Contains(t, p.body, "Acme &lt;i&gt;EU&lt;/i&gt;")
			require.Contains(t, p.body, "eve&lt;script&gt;alert(1)&lt;/script&gt;")
		}},
		// TestWebUIPagesShowTheRealm: the pages show what the realm holds: the
		// tree with its members, a user's roles and memberships, a client's
		// resources and permissions.
		{"TestWebUIPagesShowTheRealm", func(t *testing.T) {
			home := u.do(c, http.MethodGet, "/ui/realms/acme/home", nil)
			require.Equal(t, http.StatusOK, home.status)
			require.Contains(t, home.body, "Signed in as alice")
			require.Contains(t, home.body, `href="/ui/realms/acme/organizations/`+u.id("org", "acme-eu")+`"`)
			require.Contains(t, home.body, `href="/ui/realms/acme/clients/orders-api"`)
			require.NotContains(t, home.body, "service-account-orders-api")

			org := u.do(c, http.MethodGet, "/ui/realms/acme/organizations/"+u.id("org", "acme-eu"), nil)
			require.Equal(t, http.StatusOK, org.status)
			// Inside Sales is nested under Sales, with alice as its member.
			sales := strings.Index(org.body, ">Sales<")
			inside := strings.Index(org.body, ">Inside Sales<")
			require.Positive(t, sales)
			require.Greater(t, inside, sales)
			require.Contains(t, org.body[sales:inside], `href="../users/`+u.id("user", "bob")+`">bob</a>`)
			require.Contains(t, org.body[inside:], `href="../users/`+u.id("user", "alice")+`">alice</a>`)

			user := u.do(c, http.MethodGet, "/ui/realms/acme/users/"+u.id("user", "bob"), nil)
			require.Equal(t, http.StatusOK, user.status)
			require.Contains(t, user.body, "support")
			require.Contains(t, user.body, "Sales")

			client := u.do(c, http.MethodGet, "/ui/realms/acme/clients/orders-api", nil)
			require.Equal(t, http.StatusOK, client.status)
			require.Contains(t, client.body, "viewers read orders")
			require.Contains(t, client.body, "role viewer")
			require.Contains(t, client.body, "user eve&lt;script&gt;")
		}},
		// TestWebUIRealmChooser: /ui/ asks for a realm and reveals none; naming
		// one leads to its pages.
		{"TestWebUIRealmChooser", func(t *testing.T) {
			p := u.do(u.browser(), http.MethodGet, "/ui/", nil)
			require.Equal(t, http.StatusOK, p.status)
			require.NotContains(t, p.body, "acme")
			p = u.do(u.browser(), http.MethodGet, "/ui/?realm=a%2Fb%20c", nil)
			require.Equal(t, http.StatusSeeOther, p.status)
			require.Equal(t, "/ui/realms/a%2Fb%20c/home", p.header.Get("Location"))
		}},
		// TestWebUIUserShowsEffectiveRolesWithSources: a user's page lists the
		// roles a decision counts, each with every way the user holds it.
		{"TestWebUIUserShowsEffectiveRolesWithSources", func(t *testing.T) {
			p := u.do(c, http.MethodGet, "/ui/realms/acme/users/"+u.id("user", "bob"), nil)
			require.Equal(t, http.StatusOK, p.status)
			rows := regexp.MustCompile(`(?s)<tr><td class="role-name">(.*?)</td><td>(.*?)</td></tr>`).FindAllStringSubmatch(p.body, -1)
			got := map[string]string{}
			for _, r := range rows {
				got[r[1]] = r[2]
			}
			// bob: viewer through group support; clerk through Acme EU, where he
			// is in Sales.
			require.Equal(t, map[string]string{
				"viewer": `<ul class="sources"><li>through group support</li></ul>`,
				"clerk":  `<ul class="sources"><li>through organization Acme &lt;i&gt;EU&lt;/i&gt; (department Sales)</li></ul>`,
			}, got)

			p = u.do(c, http.MethodGet, "/ui/realms/acme/users/"+u.id("user", "alice"), nil)
			require.Contains(t, p.body, `<td class="role-name">realm-admin</td><td><ul class="sources"><li>assigned directly</li></ul>`)
		}},
		// TestWebUIEvaluatorShowsTheReasons: the evaluator shows, for each pair,
		// the permissions that apply, which matched and on what facts.
		{"TestWebUIEvaluatorShowsTheReasons", func(t *testing.T) {
			csrf := u.csrf(c, "/ui/realms/acme/evaluate")
			for _, tc := range []struct {
				name                          string
				user, resource, scope, method string
				says                          []string
			}{
				{"granted through an organization role", "bob", "orders", "delete", "DELETE", []string{
					`>GRANT<`,
					`permission &#34;clerks delete orders&#34; grants it.`,
					`<li>methods DELETE: the request's DELETE is one</li>`,
					`<li>role clerk: held, through organization Acme &lt;i&gt;EU&lt;/i&gt; (department Sales)</li>`,
				}},
				{"refused by a method limit", "bob", "orders", "delete", "GET", []string{
					`>DENY<`,
					`none of the 1 permissions that apply grants it.`,
					`<li>methods DELETE: the request's GET is not one</li>`,
				}},
				{"no role named", "bob", "orders", "write", "", []string{
					`>DENY<`,
					`<li>user eve&lt;script&gt;alert(1)&lt;/script&gt;: another user</li>`,
				}},
				{"undefined resource", "bob", "invoices", "read", "", []string{
					`>ERROR<`,
					`the client defines no resource &#34;invoices&#34;.`,
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					p := u.do(c, http.MethodPost, "/ui/realms/acme/evaluate", url.Values{"csrf": {csrf}, "user": {tc.user},
						"client": {"orders-api"}, "resource": {tc.resource}, "scope": {tc.scope}, "method": {tc.method}})
					require.Equal(t, http.StatusOK, p.status)
					for _, want := range tc.says {
						require.Contains(t, p.body, want)
					}
				})
			}
		}},
	} {
		t.Run(tc.name, tc.check)
	}
}

// TestWebUIAnswersHostileRequestsWith4xx: malformed forms, queries, ids
// and realms get a 4xx with the reason, to a browser as a page and to
// anyone else as the service's error body; never a 5xx.
func TestWebUIAnswersHostileRequestsWith4xx(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	c := u.admin()
	csrf := u.csrf(c, "/ui/realms/acme/home")
	long := strings.Repeat("a", maxUIField+1)
	for _, tc := range []struct {
		name, method, path, ctype, body string
		status                          int
	}{
		{"login: JSON body", "POST", "/ui/realms/acme/login", "application/json", `{"username":"alice"}`, http.StatusUnsupportedMediaType},
		{"login: no content type", "POST", "/ui/realms/acme/login", "", "username=alice", http.StatusUnsupportedMediaType},
		{"login: bad escape", "POST", "/ui/realms/acme/login", "application/x-www-form-urlencoded", "username=%zz&password=x", http.StatusBadRequest},
		{"login: username twice", "POST", "/ui/realms/acme/login", "application/x-www-form-urlencoded", "username=alice&username=bob&password=alice-pw", http.StatusBadRequest},
		{"login: long field", "POST", "/ui/realms/acme/login", "application/x-www-form-urlencoded", "username=" + long + "&password=x", http.StatusBadRequest},
		{"login: body over 1 MiB", "POST", "/ui/realms/acme/login", "application/x-www-form-urlencoded", "username=alice&x=" + strings.Repeat("b", maxBody), http.StatusBadRequest},
		{"login: unknown realm", "POST", "/ui/realms/nope/login", "application/x-www-form-urlencoded", "username=alice&password=alice-pw", http.StatusNotFound},
		{"login page: unknown realm", "GET", "/ui/realms/nope/login", "", "", http.StatusNotFound},
		{"page: unknown realm", "GET", "/ui/realms/nope/home", "", "", http.StatusNotFound},
		{"page: malformed query", "GET", "/ui/realms/acme/home?x=%zz", "", "", http.StatusBadRequest},
		{"unknown organization", "GET", "/ui/realms/acme/organizations/nope", "", "", http.StatusNotFound},
		{"escaped slash in id", "GET", "/ui/realms/acme/organizations/a%2Fb", "", "", http.StatusNotFound},
		{"unknown user", "GET", "/ui/realms/acme/users/%3Cscript%3E", "", "", http.StatusNotFound},
		{"unknown client", "GET", "/ui/realms/acme/clients/nope", "", "", http.StatusNotFound},
		{"dot segment", "GET", "/ui/realms/acme/users/..", "", "", http.StatusNotFound},
		{"logout: JSON body", "POST", "/ui/realms/acme/logout", "application/json", `{"csrf":"` + csrf + `"}`, http.StatusUnsupportedMediaType},
		{"logout: csrf twice", "POST", "/ui/realms/acme/logout", "application/x-www-form-urlencoded", "csrf=" + csrf + "&csrf=" + csrf, http.StatusBadRequest},
		{"realm chooser: empty realm", "GET", "/ui/?realm=", "", "", http.StatusBadRequest},
		{"realm chooser: two realms", "GET", "/ui/?realm=a&realm=b", "", "", http.StatusBadRequest},
		{"wrong method", "PUT", "/ui/realms/acme/home", "", "", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := u.send(t, c, tc.method, tc.path, tc.ctype, tc.body, nil)
			require.Equal(t, tc.status, p.status, p.body)
			require.Equal(t, "application/json", p.header.Get("Content-Type"))
			require.Contains(t, p.body, `"error":"`+http.StatusText(tc.status)+`"`)
		})
	}
	t.Run("a browser gets the error as a page", func(t *testing.T) {
		p := u.do(c, http.MethodGet, "/ui/realms/acme/organizations/nope", nil)
		require.Equal(t, http.StatusNotFound, p.status)
		require.Equal(t, "text/html; charset=utf-8", p.header.Get("Content-Type"))
		require.Contains(t, p.body, "404 Not Found")
		require.Contains(t, p.body, `organization`)
	})
	t.Run("the session survived it all", func(t *testing.T) {
		require.Equal(t, http.StatusOK, u.do(c, http.MethodGet, "/ui/realms/acme/home", nil).status)
	})
}

// TestWebUIEvaluatorDecidesAsAuthorize: the evaluator's decision of each
// pair is /authorize's for a token of the same user, and a request it
// cannot evaluate says why.
func TestWebUIEvaluatorDecidesAsAuthorize(t *testing.T) {
	t.Parallel()
	u := newUIServer(t, WithIssuer("http://issuer.test"))
	c := u.admin()
	csrf := u.csrf(c, "/ui/realms/acme/evaluate")
	eve := `eve<script>alert(1)</script>`
	seen := map[string]bool{}
	for _, tc := range []struct {
		user, resource, scope, method, org string
	}{
		{"bob", "orders", "read", "", ""},
		{"bob", "orders", "write", "POST", ""},
		{eve, "orders", "write", "", ""},
		{"alice", "orders", "read", "GET", ""},
		{"bob", "nope", "read", "", ""},
		{"bob", "orders", "fly", "", ""},
		{"bob", "orders", "delete", "DELETE", ""},
		{"bob", "orders", "delete", "GET", ""},
		{"bob", "orders", "delete", "DELETE", "acme-eu"},
		{"bob", "orders", "delete", "DELETE", "other-org"},
	} {
		t.Run(tc.user+" "+tc.resource+" "+tc.scope+" "+tc.method+" "+tc.org, func(t *testing.T) {
			// What /authorize answers for a token of the user.
			tok := testkit.Must(u.s.IssueToken("acme", tc.user, TokenOrganization(tc.org)))(t)
			body := `{"clientId":"orders-api","resources":[{"name":"` + tc.resource + `","scopes":["` + tc.scope + `"]}],"context":{"attributes":{"method":"` + tc.method + `"}}}`
			res := u.send(t, http.DefaultClient, http.MethodPost, "/realms/acme/authorization-decision-provider/authorize", "application/json", body,
				http.Header{"Authorization": {"Bearer " + tok}})
			require.Equal(t, http.StatusOK, res.status, res.body)
			want := regexp.MustCompile(`"status":"([A-Z]+)"`).FindStringSubmatch(res.body)[1]
			seen[want] = true

			p := u.do(c, http.MethodPost, "/ui/realms/acme/evaluate", url.Values{"csrf": {csrf}, "user": {tc.user},
				"client": {"orders-api"}, "resource": {tc.resource}, "scope": {tc.scope}, "method": {tc.method}, "organization": {tc.org}})
			require.Equal(t, http.StatusOK, p.status, p.body)
			require.Regexp(t, `id="decision" class="[a-z]+">`+want+`<`, p.body)
		})
	}
	require.Equal(t, map[string]bool{"GRANT": true, "DENY": true, "ERROR": true}, seen, "the cases cover every status")
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"unknown user", url.Values{"user": {"mallory"}, "client": {"orders-api"}, "resource": {"orders"}, "scope": {"read"}}, http.StatusNotFound, "user (a value of 7 bytes, not repeated) in realm &#34;acme&#34;"},
		{"unknown client", url.Values{"user": {"bob"}, "client": {"nope"}, "resource": {"orders"}, "scope": {"read"}}, http.StatusNotFound, "client (a value of 4 bytes, not repeated) in realm &#34;acme&#34;"},
		{"no user", url.Values{"user": {""}, "client": {"orders-api"}, "resource": {"orders"}, "scope": {"read"}}, http.StatusBadRequest, "name a user and a client"},
		{"odd method", url.Values{"user": {"bob"}, "client": {"orders-api"}, "resource": {"orders"}, "scope": {"read"}, "method": {"BREW"}}, http.StatusBadRequest, "method must be one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			p := u.do(c, http.MethodPost, "/ui/realms/acme/evaluate", tc.form)
			require.Equal(t, tc.status, p.status, p.body)
			require.Contains(t, p.body, tc.says)
			require.NotContains(t, p.body, `id="decision"`)
		})
	}
}

// TestWebUILogoutWithoutRealmManagement: an administrator who lost realm
// management can still sign out (logout needs a valid session and its
// CSRF token only), and the session stays refused when realm management is
// given back (issue 28).
func TestWebUILogoutWithoutRealmManagement(t *testing.T) {
	t.Parallel()
	u := newUIServer(t)
	c := u.admin()
	csrf := u.csrf(c, "/ui/realms/acme/home")
	var adminRole string
	setAdmin := func(on bool) {
		require.NoError(t, u.s.store.Write("acme", func(rm *store.Realm) error {
			adminRole = rm.RoleByName[store.RoleRealmAdmin]
			roles := rm.Users[rm.UserByName["alice"]].RoleIDs
			if on {
				roles[adminRole] = struct{}{}
			} else {
				delete(roles, adminRole)
			}
			return nil
		}))
	}
	setAdmin(false)
	p := u.do(c, http.MethodPost, "/ui/realms/acme/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, p.status, "a session whose user lost realm management can still sign out")
	setAdmin(true)
	p = u.do(c, http.MethodGet, "/ui/realms/acme/home", nil)
	require.NotEqual(t, http.StatusOK, p.status, "the session whose sign-out was refused is live again")
}

// TestWebUIRefusesForeignHost: the UI answers a request for a loopback
// host or the server's public URL only; any other Host (a page that
// rebound its own name to 127.0.0.1, DNS rebinding) is a 403, a valid
// session cookie or not (issue 28).
func TestWebUIRefusesForeignHost(t *testing.T) {
	t.Parallel()
	u := newUIServer(t, WithIssuer("https://idp.example/auth"))
	base := testkit.Must(url.Parse(u.url + "/ui/realms/acme/home"))(t)
	cookie := u.admin().Jar.Cookies(base)[0]
	for _, tc := range []struct {
		host string
		want int
	}{
		{"evil.example", http.StatusForbidden},
		{"evil.example:" + base.Port(), http.StatusForbidden},
		{"127.0.0.1.evil.example", http.StatusForbidden},
		{"localhost.evil.example", http.StatusForbidden},
		{"idp.example:8443", http.StatusForbidden},
		{"10.0.0.1", http.StatusForbidden},
		{"idp.example", http.StatusOK},
		{"localhost:" + base.Port(), http.StatusOK},
		{"127.0.0.2", http.StatusOK},
		{"[::1]:8080", http.StatusOK},
	} {
		t.Run(tc.host, func(t *testing.T) {
			for _, path := range []string{"/ui/realms/acme/home", "/ui/", "/ui/style.css", "/ui/realms/acme/login"} {
				req := newRequest(t, http.MethodGet, u.url+path, nil)
				req.Host = tc.host
				req.AddCookie(cookie)
				resp := testkit.Must(http.DefaultClient.Do(req))(t)
				body := testkit.Must(io.ReadAll(resp.Body))(t)
				_ = resp.Body.Close()
				require.Equal(t, tc.want, resp.StatusCode, "%s %s: %s", tc.host, path, body)
				if tc.want == http.StatusForbidden {
					require.Contains(t, string(body), "loopback host")
					require.NotContains(t, string(body), "Inside Sales")
				}
			}
		})
	}
}
