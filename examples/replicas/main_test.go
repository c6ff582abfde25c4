package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestLogoutReachesEveryReplica runs two replicas of the example against
// the reference server (the acme fixture its comment uses) and one Redis:
// after POST /logout on one, the other no longer answers that token from
// its cache.
func TestLogoutReachesEveryReplica(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../fixtures/acme.json"))
	rs := redistest.Start(t)
	var replicas []http.Handler
	var clients []*pep.Client
	for range 2 {
		// The hang guard: a clean call beside the rest of the suite on a
		// loaded machine can overrun the 2 s default and fail closed.
		c, err := newClient(gw.URL, "acme", "orders-api", rs.Client(), "test", pep.WithHTTPClient(gw.Client()), pep.WithTimeout(hangguard.Timeout))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
		replicas = append(replicas, routes(c))
	}
	require.Eventually(t, func() bool {
		for _, c := range clients {
			if c.Stats().CacheBypassed {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the replicas did not subscribe")

	token := gw.Token("acme", "carol")
	get := func(h http.Handler, method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	get(replicas[1], "GET", "/orders/42")
	rec := get(replicas[1], "GET", "/orders/42")
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.Contains(rec.Body.String(), "cached: true"), rec.Body.String())

	require.Equal(t, http.StatusNoContent, get(replicas[0], "POST", "/logout").Code)
	require.Eventually(t, func() bool { return clients[1].Stats().Invalidations > 0 }, 10*time.Second, 5*time.Millisecond)
	rec = get(replicas[1], "GET", "/orders/42")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), "cached: false")
}

// TestLogoutPurgesOnlyATokenTheGatewayAccepts: POST /logout publishes a
// purge, which every replica applies, only for a token the gateway
// accepts; any other string a caller sends is refused with 401.
func TestLogoutPurgesOnlyATokenTheGatewayAccepts(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../fixtures/acme.json"))
	rs := redistest.Start(t)
	c, err := newClient(gw.URL, "acme", "orders-api", rs.Client(), "test", pep.WithHTTPClient(gw.Client()), pep.WithTimeout(hangguard.Timeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	h := routes(c)
	tests := []struct {
		name, token string
		want        int
	}{
		{"a token of the gateway", gw.Token("acme", "carol"), http.StatusNoContent},
		{"a token the gateway never issued", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjYXJvbCJ9.Zm9yZ2Vk", http.StatusUnauthorized},
		{"an expired token of the gateway", gw.Token("acme", "carol", mockserver.TokenLifetime(-time.Minute)), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/logout", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tt.want, rec.Code, rec.Body.String())
		})
	}
}
