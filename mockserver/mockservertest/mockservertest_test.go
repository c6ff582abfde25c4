package mockservertest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

func TestStart(t *testing.T) {
	srv := mockservertest.Start(t, mockserver.WithFixture(mockserver.Fixture{
		Realms: []mockserver.FixtureRealm{{Name: "acme", Users: []mockserver.FixtureUser{{Username: "alice", Roles: []string{"realm-admin"}}}}},
	}))
	require.NotEmpty(t, srv.Token("acme", "alice"))
	require.NotEmpty(t, srv.AdminToken())

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/no/such/route", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
