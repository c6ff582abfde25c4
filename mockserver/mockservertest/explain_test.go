package mockservertest_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// ExampleServer_Explain: why may carol not delete orders with a GET?
func ExampleServer_Explain() {
	t := &exampleT{}
	defer t.finish()
	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../../examples/fixtures/acme.json"))
	fmt.Println(gw.Explain("acme", "carol", "orders", "delete", mockservertest.ExplainMethod("GET")))
	// Output:
	// DENY for carol on client orders-api (method GET, assignments in every organization count)
	//   orders#delete: DENY, none of the 1 permissions that apply grants it
	//     permission "managers delete orders, only with DELETE" does not match:
	//       method GET is not one it allows (DELETE)
	//       role order-manager: held (organization role of Acme US, through department Operations)
	//   carol's roles: order-clerk (organization role of Acme EU, through department Inside Sales; organization role of Acme EU, through department Sales); order-manager (organization role of Acme US, through department Operations)
	//   carol's groups: none
}

// TestExplainOptions: the options set the decision explained, and each
// changes the answer as the same token would.
func TestExplainOptions(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixtureFile(acme), es256Tokens)
	cases := []struct {
		name, user, resource, scope string
		opts                        []mockservertest.ExplainOption
		want                        []string
	}{
		{"with the method it needs", "carol", "orders", "delete", []mockservertest.ExplainOption{mockservertest.ExplainMethod("DELETE")},
			[]string{"GRANT for carol", `orders#delete: GRANT, permission "managers delete orders, only with DELETE" grants it`}},
		{"in an organization where the role is not held", "carol", "orders", "delete",
			[]mockservertest.ExplainOption{mockservertest.ExplainMethod("DELETE"), mockservertest.ExplainOrganization("acme-eu"), mockservertest.ExplainClient("orders-api")},
			[]string{`DENY for carol on client orders-api (method DELETE, organization "acme-eu": only assignments there count)`,
				"method DELETE is allowed (DELETE)", "role order-manager: not held"}},
		{"an unknown organization", "carol", "orders", "read", []mockservertest.ExplainOption{mockservertest.ExplainOrganization("acme-mars")},
			[]string{`organization "acme-mars" names no organization: no assignment counts`, "carol's roles: none"}},
		{"every scope, a group and a named user", "dave", "invoices", "", []mockservertest.ExplainOption{mockservertest.ExplainPath("/invoices/7")},
			[]string{"GRANT for dave on client orders-api (method none, path /invoices/7", "invoices#read: GRANT", "invoices#approve: GRANT",
				"dave's roles: auditor (template role of department Finance in Acme EU); invoice-approver (group finance); order-clerk (organization role of Acme EU, through department Finance)",
				"dave's groups: finance"}},
		{"no permission names the user", "erin", "invoices", "approve", nil,
			[]string{"DENY for erin", `permission "finance reads and approves invoices" does not match:`, "group finance: not a member", "erin's roles: none"}},
		{"an undefined scope", "bob", "orders", "fly", nil,
			[]string{`orders#fly: ERROR, resource "orders" defines no scope "fly"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := gw.Explain("acme", tc.user, tc.resource, tc.scope, tc.opts...)
			for _, w := range tc.want {
				require.Contains(t, text, w)
			}
		})
	}
}

// logT is a test whose log and cleanups are recorded.
type logT struct {
	exampleT
	mu    sync.Mutex
	lines []string
}

func (t *logT) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

func (t *logT) logged() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// TestLogDenials: with LogDenials, a pep client's DENY shows in the test's
// log with its reason, a GRANT does not, and nothing is logged once the
// test's cleanup has begun.
func TestLogDenials(t *testing.T) {
	t.Parallel()
	lt := &logT{exampleT: exampleT{TB: t}}
	gw := mockservertest.Start(lt, mockserver.WithFixtureFile(acme), es256Tokens, mockservertest.LogDenials(lt))
	c := client(t, gw, pep.WithCache(0, 0, 0))
	t.Cleanup(func() { _ = c.Close() })
	require.Equal(t, pep.Grant, check(t, c).Status)
	require.Empty(t, lt.logged())

	c.SetToken(gw.Token("acme", "erin"))
	require.Equal(t, pep.Deny, check(t, c).Status)
	lines := lt.logged()
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], "DENY for erin on client orders-api")
	require.Contains(t, lines[0], `permission "viewers read orders" does not match:`)
	require.Contains(t, lines[0], "role viewer: not held")

	// The cleanup closes the log before the test ends; a decision made
	// after it (here by a server started again) logs nothing.
	lt.finish()
	lt.cleanups = nil
	gw.Restart()
	t.Cleanup(gw.Stop)
	require.Equal(t, pep.Deny, check(t, c).Status)
	require.Len(t, lt.logged(), 1)
}
