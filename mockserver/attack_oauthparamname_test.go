package mockserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackOAuthErrorRepeatsASecretAsParamName (a-fix14): the service's
// errors describe a query parameter's or form field's name that is not a
// word of the API ("(a name of 28 bytes, not repeated)"), but the OAuth
// endpoints' descriptions are built by concatenation outside errf, and
// paramName keeps any name of lower-case letters and '_' up to 32 bytes:
// a rule by shape, which echo.go says decides nothing. A user's password
// of that shape (a passphrase), sent where a parameter's name goes -- a
// form built as "...&username=bob&" + password, or twice -- comes back
// whole in error_description, which OAuth clients put into their errors
// and logs. The same name on /admin and the web UI is described.
func TestAttackOAuthErrorRepeatsASecretAsParamName(t *testing.T) {
	t.Parallel()
	a := newOrgAPIWith(t, WithFixture(orgFixture()), WithAdminSecret("boot"), WithWebUI())
	const secret = "correct_horse_battery_staple" // a user's passphrase
	form := "application/x-www-form-urlencoded"
	twice := "&" + secret + "=&" + secret + "="
	// The service's writer describes it: the premise.
	svc := a.sendRaw("", http.MethodGet, a.url+"/admin/realms/acme/organizations?"+secret+"=%zz", "", "")
	require.Equal(t, http.StatusBadRequest, svc.Status, string(svc.Body))
	require.NotContains(t, string(svc.Body), secret)
	for _, c := range []struct{ name, method, path, body string }{
		{"token, a form field given twice", http.MethodPost, "/realms/acme/protocol/openid-connect/token", "grant_type=password&client_id=orders-api&username=bob" + twice},
		{"token, a query parameter's name", http.MethodPost, "/realms/acme/protocol/openid-connect/token?" + secret + "=%zz", "grant_type=password"},
		{"revoke, a form field given twice", http.MethodPost, "/realms/acme/protocol/openid-connect/revoke", "token=x" + twice},
		{"introspect, a form field given twice", http.MethodPost, "/realms/acme/protocol/openid-connect/token/introspect", "token=x" + twice},
		{"auth, a query parameter's name", http.MethodGet, "/realms/acme/protocol/openid-connect/auth?client_id=web&" + secret + "=%zz", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.sendRaw("", c.method, a.url+c.path, form, c.body)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
			assert.NotContains(t, string(r.Body), secret, "the OAuth error repeats the caller's value: %s", r.Body)
			assert.True(t, strings.Contains(string(r.Body), "invalid_request"), string(r.Body))
		})
	}
}
