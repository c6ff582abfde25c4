package interop_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/orgauthz/orgauthz/internal/servertest"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// The fixtures and request helpers of the reference server's own tests
// are internal/servertest's; those below are this package's.

const (
	tokenPath     = "/realms/acme/protocol/openid-connect/token"
	authorizePath = "/realms/acme/authorization-decision-provider/authorize"
	userinfoPath  = "/realms/acme/protocol/openid-connect/userinfo"
)

// postJSON posts body to path, with token as Bearer when it is not empty.
func postJSON(t *testing.T, srv *mockservertest.Server, path, token, body string) servertest.Result {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return servertest.Send(t, srv, http.MethodPost, path, "application/json", strings.NewReader(body), h)
}

// bearerGet GETs path with token as Bearer.
func bearerGet(t *testing.T, srv *mockservertest.Server, path, token string) servertest.Result {
	t.Helper()
	return servertest.Send(t, srv, http.MethodGet, path, "", nil, http.Header{"Authorization": {"Bearer " + token}})
}

// adminCall calls an admin route with token as Bearer and body as JSON
// when it is not empty.
func adminCall(t *testing.T, srv *mockservertest.Server, method, path, token, body string) servertest.Result {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		return servertest.Send(t, srv, method, path, "application/json", strings.NewReader(body), h)
	}
	return servertest.Send(t, srv, method, path, "", nil, h)
}
