package mockservertest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/internal/openapitest"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

func TestStart(t *testing.T) {
	srv := mockservertest.Start(t, mockserver.WithFixture(mockserver.Fixture{
		Realms: []mockserver.FixtureRealm{{Name: "acme", Users: []mockserver.FixtureUser{{Username: "alice", Roles: []string{"realm-admin"}}}}},
	}))
	require.NotEmpty(t, srv.Token("acme", "alice"))
	require.NotEmpty(t, srv.AdminToken())

	// The exchanges are checked against the server's OpenAPI document.
	chk := testkit.Must(openapitest.New(mockserver.OpenAPI()))(t)
	client := &http.Client{Transport: chk.Transport(srv.Client().Transport)}
	for path, want := range map[string]int{"/no/such/route": http.StatusNotFound, "/realms/acme/.well-known/openid-configuration": http.StatusOK} {
		req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil))(t)
		resp := testkit.Must(client.Do(req))(t)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode)
	}
	require.NoError(t, chk.Err())
}
