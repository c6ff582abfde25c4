package mockserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestOAuthErrorsRepeatNoValue: a-server12 F1. The token endpoint copied
// grant_type's value, whole, into error_description: a client that sends a
// credential in the wrong parameter got it back in an error string, which
// OAuth clients put into their errors and logs (x/oauth2's RetrieveError
// prints it), and a 200 kB value came back as a 200 kB body. An OAuth
// error names what was wrong and repeats no value; a parameter's name,
// which a caller chooses too, comes back cut to 64 bytes of the printable
// ASCII RFC 6749 section 5.2 allows there.
//
// a-fix14 F1: a parameter's name is repeated only when it is a word of the
// API or a registered OAuth parameter's (oauthParams), never for its
// shape: paramName kept any name of lower-case letters and '_' up to 32
// bytes, so a passphrase sent where a name goes (a form built as
// "...&username=bob&" + password) came back whole. Each description is
// built by oauthErrorf, which quotes its arguments for sayable.
func TestOAuthErrorsRepeatNoValue(t *testing.T) {
	srv := mockservertest.Start(t, es256Tokens, mockserver.WithFixture(adminFixture()))
	tok := srv.Token("acme", "alice")
	const oidc = "/realms/acme/protocol/openid-connect/"
	const passphrase = "correct_horse_battery_staple" // a user's password, of an OAuth name's shape
	twice := "&" + passphrase + "=&" + passphrase + "="
	for _, tc := range []struct{ name, path, form, says string }{
		{"a token as grant_type", oidc + "token", url.Values{"grant_type": {tok}, "client_id": {"orders-api"}}.Encode(), ""},
		{"a long grant_type", oidc + "token", url.Values{"grant_type": {strings.Repeat("x", 200_000)}}.Encode(), ""},
		{"a token as a repeated parameter's name", oidc + "token", "grant_type=password&" + tok + "=1&" + tok + "=2", ""},
		{"a token as a long parameter's name", oidc + "auth", tok + "=" + strings.Repeat("x", 9000), ""},
		{"a token as a malformed query parameter's name", oidc + "token?" + tok + "%zz=1", "grant_type=password", ""},
		{"a passphrase as a repeated form field's name", oidc + "token", "grant_type=password&client_id=orders-api&username=bob" + twice,
			"parameter (a value of 28 bytes, not repeated) is given more than once"},
		{"a passphrase as a query parameter's name", oidc + "token?" + passphrase + "=%zz", "grant_type=password", "query parameter (a value of 28 bytes, not repeated): "},
		{"a passphrase as a revocation's repeated field", oidc + "revoke", "token=x" + twice, "(a value of 28 bytes, not repeated)"},
		{"a passphrase as an introspection's repeated field", oidc + "token/introspect", "token=x" + twice, "(a value of 28 bytes, not repeated)"},
		{"a passphrase as an authorization's query parameter", oidc + "auth?client_id=web&" + passphrase + "=%zz", "", "(a value of 28 bytes, not repeated)"},
		// A registered OAuth parameter's name is the server's word: named.
		{"a registered parameter given twice", oidc + "token", "grant_type=password&client_id=a&client_id=b", "parameter 'client_id' is given more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.form)))(t)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res := testkit.Must(srv.Client().Do(req))(t)
			body := testkit.Must(io.ReadAll(res.Body))(t)
			require.NoError(t, res.Body.Close())
			require.Equal(t, http.StatusBadRequest, res.StatusCode, "%.300s", body)
			var e struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			require.NoError(t, json.Unmarshal(body, &e), "%.300s", body)
			require.NotEmpty(t, e.Error)
			require.NotContains(t, string(body), tok[:64], "the error repeats the caller's token")
			require.NotContains(t, string(body), "xxxxxxxx", "the error repeats the caller's value")
			require.NotContains(t, string(body), passphrase, "the error repeats the caller's value")
			require.Contains(t, e.Description, tc.says)
			require.Less(t, len(body), 512, "an error's body is bounded: %.300s", body)
			for _, c := range []byte(e.Description) {
				require.True(t, c >= 0x20 && c <= 0x7e && c != '"' && c != '\\', "RFC 6749 5.2: error_description %q", e.Description)
			}
		})
	}
}
