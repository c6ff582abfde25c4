package mockserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/openapitest"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestTheCheckerTakesAHostRefusalOnlyForARefusedHost (a-fix11 F5): the
// checker took any 400 whose body looked like the Host refusal as the
// refusal that comes before routing, whatever the request's Host: an
// undocumented route or method answering such a 400 to a valid Host
// passed unnoticed. It takes it only where HostRefused says the server
// refuses the Host.
func TestTheCheckerTakesAHostRefusalOnlyForARefusedHost(t *testing.T) {
	t.Parallel()
	chk := testkit.Must(openapitest.New(openAPIDocument))(t)
	chk.HostRefused = refusedHost

	s := &Server{store: store.New(nil)}
	rec := httptest.NewRecorder()
	s.writeErr(rec, badField("Host", "whatever a handler says"))
	req := httptest.NewRequest(http.MethodGet, "http://ok.test/no/such/route", nil)
	require.True(t, validHost(req.Host))
	err := chk.Check(req, rec.Code, rec.Header(), rec.Body.Bytes())
	assert.Error(t, err, "an undocumented route's 400 to a request with a valid Host is a mismatch")

	rec = httptest.NewRecorder()
	s.writeOAuthError(rec, &oauthError{status: http.StatusBadRequest, code: "invalid_request", description: "Host unrelated"})
	req = httptest.NewRequest(http.MethodPut, "http://ok.test/realms/acme/protocol/openid-connect/token", nil)
	err = chk.Check(req, rec.Code, rec.Header(), rec.Body.Bytes())
	assert.Error(t, err, "a method the document does not list, answered 400, with a valid Host")
}

// TestTheHostRefusalsBodyFollowsTheEscapedPath (a-fix11 F5): the Host
// refusal's body was chosen by the decoded path, so an admin operation
// whose parameter held "/protocol/openid-connect/" escaped answered with
// the OAuth body its documented 400 does not allow. It follows the path
// as the router reads it.
func TestTheHostRefusalsBodyFollowsTheEscapedPath(t *testing.T) {
	t.Parallel()
	chk := testkit.Must(openapitest.New(openAPIDocument))(t)
	chk.HostRefused = refusedHost
	noIssuer := mustNew(t, WithFixture(orgFixture()), WithAdminSecret("boot"))
	h := chk.Middleware(noIssuer)
	req := httptest.NewRequest(http.MethodGet, "http://x.test/admin/realms/acme/organizations/x%2Fprotocol%2Fopenid-connect%2Fy", nil)
	req.Host = strings.Repeat("h", 256) + ".test"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	require.NoError(t, chk.Err(), "answer: %s", rec.Body.String())
}
