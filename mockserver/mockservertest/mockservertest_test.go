package mockservertest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

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
	chk, err := openapitest.New(mockserver.OpenAPI())
	require.NoError(t, err)
	client := &http.Client{Transport: chk.Transport(srv.Client().Transport)}
	for path, want := range map[string]int{"/no/such/route": http.StatusNotFound, "/realms/acme/.well-known/openid-configuration": http.StatusOK} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode)
	}
	require.NoError(t, chk.Err())
}
