package webui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// chromium returns the path of the browser, or fails the test with how to
// install one.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ORGAUTHZ_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the web UI test needs Chromium and found none on PATH: install it " +
		"(Debian/Ubuntu: sudo apt-get install chromium), or set ORGAUTHZ_CHROMIUM to a Chromium or Chrome executable")
	return ""
}

// browser starts a headless Chromium of its own (a fresh profile, no
// sandbox, which a container's root user cannot have) and returns a tab's
// context; both end with the test. ctx bounds the whole test: a page that
// never shows what the test waits for fails it rather than hanging.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 760),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(tcancel)
	require.NoError(t, chromedp.Do(tab), "starting %s", chromium(t))
	return tab
}

// screenshot saves the page as webui-name.png in dir.
func screenshot(name, dir string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "webui-"+name+".png"), png, 0o644)
	})
}

// TestWebUIInChromium signs in to the acme example realm as its
// administrator in a real browser, opens the department tree of Acme EU,
// the client orders-api and the evaluator, runs a GRANT and a DENY, signs
// out, and checks that a user without realm management is turned away.
func TestWebUIInChromium(t *testing.T) {
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"), mockserver.WithWebUI())
	shots := os.Getenv("ORGAUTHZ_WEBUI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	tab := browser(t)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(tab, steps...), what)
	}
	text := func(sel chromedp.Search) string {
		t.Helper()
		s, err := chromedp.Run(tab, chromedp.Text(sel))
		require.NoError(t, err, "read %s", sel)
		return s
	}
	location := func() string {
		t.Helper()
		u, err := chromedp.Run(tab, chromedp.Location())
		require.NoError(t, err)
		return u
	}

	// A page of the realm without a session leads to the login form.
	run("open the realm's first page",
		chromedp.Navigate(srv.URL+"/ui/realms/acme/home"),
		chromedp.WaitVisible(chromedp.CSS(`#login`)))
	require.Equal(t, srv.URL+"/ui/realms/acme/login", location())
	run("screenshot login", screenshot("login", shots))

	// bob holds no realm management: the form says so and he stays out.
	run("sign in as bob",
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), "bob"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "bob"),
		chromedp.Submit(chromedp.CSS(`#login`)),
		chromedp.WaitVisible(chromedp.CSS(`#error`)))
	require.Contains(t, text(`#error`), "lacks realm management")

	run("sign in as alice",
		chromedp.Navigate(srv.URL+"/ui/"),
		chromedp.SendKeys(chromedp.CSS(`input[name=realm]`), "acme"),
		chromedp.Submit(chromedp.CSS(`#realm`)),
		chromedp.WaitVisible(chromedp.CSS(`#login`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), "alice"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "alice"),
		chromedp.Submit(chromedp.CSS(`#login`)),
		chromedp.WaitVisible(chromedp.CSS(`#organizations`)))
	require.Equal(t, "Signed in as alice", text(`#signed-in`))
	require.Contains(t, text(`#organizations`), "Acme EU")
	require.Contains(t, text(`#clients`), "orders-api")
	run("screenshot home", screenshot("home", shots))

	// The tree: Inside Sales under Sales, each with its members.
	run("open Acme EU",
		chromedp.Click(chromedp.Search(`//section[@id="organizations"]//a[text()="Acme EU"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#tree`)))
	require.Equal(t, "Acme EU", text(`#org-name`))
	sales := text(`//ul[@id="tree"]/li[span[@class="dept-name"]="Sales"]/div[@class="members"]`)
	inside := text(`//ul[@id="tree"]/li[span[@class="dept-name"]="Sales"]/ul/li[span[@class="dept-name"]="Inside Sales"]/div[@class="members"]`)
	finance := text(`//ul[@id="tree"]/li[span[@class="dept-name"]="Finance"]/div[@class="members"]`)
	require.Equal(t, "Members: bob, carol", sales)
	require.Equal(t, "Members: carol", inside)
	require.Equal(t, "Members: dave", finance)
	run("screenshot tree", screenshot("tree", shots))

	// bob's effective roles, each with where it comes from.
	run("open bob",
		chromedp.Click(chromedp.Search(`//ul[@id="tree"]/li[span[@class="dept-name"]="Sales"]/div[@class="members"]/a[text()="bob"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#effective`)))
	require.Equal(t, "bob", text(`#user-name`))
	require.Equal(t, "through group support", text(`//table[@id="effective"]//tr[td[@class="role-name"]="viewer"]/td[2]`))
	require.Contains(t, text(`//table[@id="effective"]//tr[td[@class="role-name"]="order-clerk"]/td[2]`),
		"through organization Acme EU (department Sales)")
	run("screenshot user", screenshot("user", shots))

	run("open orders-api",
		chromedp.Click(chromedp.CSS(`#nav-home`)),
		chromedp.WaitVisible(chromedp.CSS(`#clients`)),
		chromedp.Click(chromedp.Search(`//section[@id="clients"]//a[text()="orders-api"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#permissions`)))
	require.Contains(t, text(`#permissions`), "managers delete orders, only with DELETE")
	run("screenshot client", screenshot("client", shots))

	// The evaluator: bob writes orders through Acme EU's order-clerk role
	// (he is in its Sales department); only order-manager deletes them.
	for _, tc := range []struct{ user, resource, scope, method, want string }{
		{"bob", "orders", "delete", "DELETE", "DENY"},
		{"bob", "orders", "write", "POST", "GRANT"},
	} {
		run("evaluate "+tc.user+" "+tc.resource+" "+tc.scope,
			chromedp.Click(chromedp.CSS(`#nav-evaluate`)),
			chromedp.WaitVisible(chromedp.CSS(`#evaluate`)),
			chromedp.SetValue(chromedp.CSS(`#user`), tc.user),
			chromedp.SetValue(chromedp.CSS(`#client`), "orders-api"),
			chromedp.SendKeys(chromedp.CSS(`#resource`), tc.resource),
			chromedp.SendKeys(chromedp.CSS(`#scope`), tc.scope),
			chromedp.SetValue(chromedp.CSS(`#method`), tc.method),
			chromedp.Submit(chromedp.CSS(`#evaluate`)),
			chromedp.WaitVisible(chromedp.CSS(`#decision`)))
		require.Equal(t, tc.want, text(`#decision`), "%+v", tc)
		run("screenshot evaluator", screenshot("evaluate-"+strings.ToLower(tc.want), shots))
	}
	// The reasons of the last one: which permission granted, on what.
	require.Equal(t, `permission "clerks read and write orders" grants it.`, text(`.reason`))
	require.Contains(t, text(`.checks > li.matched`), "role order-clerk: held, through organization Acme EU (department Sales)")

	// Signing out ends the session: the realm's pages lead to the login
	// form again.
	run("sign out",
		chromedp.Click(chromedp.CSS(`#logout button`)),
		chromedp.WaitVisible(chromedp.CSS(`#login`)),
		chromedp.Navigate(srv.URL+"/ui/realms/acme/home"),
		chromedp.WaitVisible(chromedp.CSS(`#login`)))
	require.Equal(t, srv.URL+"/ui/realms/acme/login", location())
}
