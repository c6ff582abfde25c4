package mockserver

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// FuzzWebUI feeds arbitrary forms, content types and queries to every page
// of the web UI, with and without a session: the answer is never a 5xx,
// every exchange matches the OpenAPI document, and a session cookie is
// only ever set by a login with alice's password, and cleared only by a
// logout.
func FuzzWebUI(f *testing.F) {
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	s, err := New(WithFixture(uiFixture()), WithClock(func() time.Time { return now }), WithWebUI())
	if err != nil {
		f.Fatal(err)
	}
	var aliceID, orgID string
	_ = s.store.Read("acme", func(rm *store.Realm) error {
		aliceID, orgID = rm.UserByName["alice"], rm.OrgByAlias["acme-eu"]
		return nil
	})
	// Each input gets a session of its own (a logout ends one), and "CSRF"
	// in its form stands for that session's token.
	const csrf = "CSRF"
	paths := []string{"/ui/", "/ui/realms/acme/login", "/ui/realms/acme/logout", "/ui/realms/acme/home",
		"/ui/realms/acme/organizations/" + orgID, "/ui/realms/acme/users/" + aliceID, "/ui/realms/acme/clients/orders-api",
		"/ui/realms/acme/evaluate"}
	for _, seed := range []string{
		"username=alice&password=alice-pw", "username=bob&password=bob-pw", "username=alice&password=x",
		"csrf=" + csrf + "&user=bob&client=orders-api&resource=orders&scope=read&method=GET",
		"csrf=" + csrf + "&user=bob&client=orders-api&resource=*&scope=read&organization=acme-eu",
		"csrf=" + csrf + "&user=%3Cb%3E&client=nope", "csrf=x", "%zz", "", ";", "a=1&a=2", "realm=acme", "realm=",
	} {
		for i := range paths {
			f.Add(uint8(i), seed, true, true, "application/x-www-form-urlencoded")
			f.Add(uint8(i), seed, false, true, "")
			f.Add(uint8(i), seed, true, false, "text/plain")
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, params string, post, withSession bool, ct string) {
		target := "http://example.com" + paths[int(which)%len(paths)]
		req, ok := formRequest(target, params, post, ct)
		if !ok {
			return
		}
		req.Header.Set("Accept", "text/html")
		if withSession {
			cookie := s.ui.newSession("acme", aliceID, now, false)
			ss, ok := s.ui.parse(cookie.Value, "acme", now)
			if !ok {
				t.Fatal("a new session does not parse")
			}
			req.AddCookie(cookie)
			if post {
				req.Body = io.NopCloser(strings.NewReader(strings.ReplaceAll(params, csrf, s.ui.csrfToken(ss))))
				req.ContentLength = -1
			}
		}
		rec := serveFuzz(t, s, req)
		if sc := rec.Header().Values("Set-Cookie"); len(sc) > 0 {
			login := strings.HasSuffix(target, "/login") && strings.Contains(params, "alice-pw")
			logout := strings.HasSuffix(target, "/logout") && strings.Contains(sc[0], "Max-Age=0")
			if !login && !logout {
				t.Fatalf("%s %q set a cookie: %q", target, params, sc)
			}
		}
	})
}
