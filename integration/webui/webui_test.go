package webui_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// requireChromiumEnv names the environment variable that, set to 1 (as
// .ci/run sets it), makes a missing Chromium a test failure rather than a
// run over plain HTTP alone.
const requireChromiumEnv = "ORGAUTHZ_REQUIRE_CHROMIUM"

// TestWebUI runs the scenario in headless Chromium and over plain HTTP.
// Without Chromium on PATH it runs over plain HTTP only and says so in the
// test log, unless ORGAUTHZ_REQUIRE_CHROMIUM=1 makes that a failure; an
// ORGAUTHZ_CHROMIUM that is not an executable always fails.
func TestWebUI(t *testing.T) {
	bin, err := findChromium()
	switch {
	case errors.Is(err, errNoChromium) && os.Getenv(requireChromiumEnv) == "1":
		t.Fatalf("the web UI test found no Chromium (%v) and %s=1 requires it: install it "+
			"(Debian/Ubuntu: sudo apt-get install chromium), or set %s to a Chromium or Chrome executable",
			err, requireChromiumEnv, chromiumEnv)
	case errors.Is(err, errNoChromium):
		t.Logf("Chromium was not found (%v): the web UI scenario runs over plain HTTP only "+
			"(the served pages and their forms, no script, no rendering); CI (.ci/run) runs it in Chromium too: "+
			"apt-get install chromium, or set %s, to run it here", err, chromiumEnv)
	case err != nil:
		t.Fatal(err)
	default:
		t.Run("chromium", func(t *testing.T) {
			shots := os.Getenv("ORGAUTHZ_WEBUI_SCREENSHOTS")
			if shots == "" {
				shots = t.TempDir()
			}
			srv := start(t)
			scenario(t, newChromium(t, bin, srv.URL, shots), srv.URL)
		})
	}
	t.Run("http", func(t *testing.T) {
		srv := start(t)
		scenario(t, newHTTPDriver(t, srv.URL), srv.URL)
	})
}

// start starts a reference server of the acme example realm with its web
// UI, for one driver.
func start(t *testing.T) *mockservertest.Server {
	return mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"), mockserver.WithWebUI())
}

// scenario signs in to the acme example realm as its administrator, opens
// the department tree of Acme EU, a user, the client orders-api and the
// evaluator, runs a DENY and a GRANT, signs out, and checks that a user
// without realm management is turned away. base is the server's URL.
func scenario(t *testing.T, d driver, base string) {
	// A page of the realm without a session leads to the login form.
	d.open("/ui/realms/acme/home", byID("login"))
	require.Equal(t, base+"/ui/realms/acme/login", d.location())
	d.screenshot("login")

	// bob holds no realm management: the form says so and he stays out.
	d.typeIn("login", "username", "bob")
	d.typeIn("login", "password", "bob")
	d.submit("login", byID("error"))
	require.Contains(t, d.text(byID("error")), "lacks realm management")

	// alice names the realm in the chooser and signs in.
	d.open("/ui/", byID("realm"))
	d.typeIn("realm", "realm", "acme")
	d.submit("realm", byID("login"))
	d.typeIn("login", "username", "alice")
	d.typeIn("login", "password", "alice")
	d.submit("login", byID("organizations"))
	require.Equal(t, "Signed in as alice", d.text(byID("signed-in")))
	require.Contains(t, d.text(byID("organizations")), "Acme EU")
	require.Contains(t, d.text(byID("clients")), "orders-api")
	d.screenshot("home")

	// The tree: Inside Sales under Sales, each with its members.
	d.click(link("organizations", "Acme EU"), byID("tree"))
	require.Equal(t, "Acme EU", d.text(byID("org-name")))
	require.Equal(t, "Members: bob, carol", d.text(members("Sales")))
	require.Equal(t, "Members: carol", d.text(members("Sales", "Inside Sales")))
	require.Equal(t, "Members: dave", d.text(members("Finance")))
	d.screenshot("tree")

	// bob's effective roles, each with where it comes from.
	d.click(member("bob", "Sales"), byID("effective"))
	require.Equal(t, "bob", d.text(byID("user-name")))
	require.Equal(t, "through group support", d.text(heldBy("viewer")))
	require.Contains(t, d.text(heldBy("order-clerk")), "through organization Acme EU (department Sales)")
	d.screenshot("user")

	d.click(byID("nav-home"), byID("clients"))
	d.click(link("clients", "orders-api"), byID("permissions"))
	require.Contains(t, d.text(byID("permissions")), "managers delete orders, only with DELETE")
	d.screenshot("client")

	// The evaluator: bob writes orders through Acme EU's order-clerk role
	// (he is in its Sales department); only order-manager deletes them.
	for _, tc := range []struct{ user, resource, scope, method, want string }{
		{"bob", "orders", "delete", "DELETE", "DENY"},
		{"bob", "orders", "write", "POST", "GRANT"},
	} {
		d.click(byID("nav-evaluate"), byID("evaluate"))
		d.choose("evaluate", "user", tc.user)
		d.choose("evaluate", "client", "orders-api")
		d.typeIn("evaluate", "resource", tc.resource)
		d.typeIn("evaluate", "scope", tc.scope)
		d.choose("evaluate", "method", tc.method)
		d.submit("evaluate", byID("decision"))
		require.Equal(t, tc.want, d.text(byID("decision")), "%+v", tc)
		d.screenshot("evaluate-" + strings.ToLower(tc.want))
	}
	// The reasons of the last one: which permission granted, on what.
	require.Equal(t, `permission "clerks read and write orders" grants it.`, d.text(firstOfClass("reason")))
	require.Contains(t, d.text(matchedCheck()), "role order-clerk: held, through organization Acme EU (department Sales)")

	// Signing out ends the session: the realm's pages lead to the login
	// form again.
	d.submit("logout", byID("login"))
	d.open("/ui/realms/acme/home", byID("login"))
	require.Equal(t, base+"/ui/realms/acme/login", d.location())
}
