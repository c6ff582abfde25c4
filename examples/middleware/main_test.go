package main

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestRoutes runs the example's routes against the reference server seeded
// with the acme fixture the example's comment uses.
func TestRoutes(t *testing.T) {
	gw := mockservertest.Start(t, mockserver.WithFixtureFile("../fixtures/acme.json"))
	client, err := hangguard.NewPep(gw.URL, "acme", "orders-api")
	require.NoError(t, err)
	svc := routes(client)

	tests := []struct {
		user, method, path string
		status             int
	}{
		{"carol", "GET", "/orders/42", 200},
		{"carol", "PUT", "/orders/42", 200},
		{"carol", "DELETE", "/orders/42", 200}, // order-manager in Acme US, DELETE only
		{"bob", "DELETE", "/orders/42", 403},   // a clerk may not delete
		{"erin", "GET", "/orders/42", 403},     // erin may only read invoices
		{"dave", "GET", "/invoices/7/approve", 200},
		{"erin", "GET", "/invoices/7/approve", 403},
		{"", "GET", "/orders/42", 401},
	}
	for _, tt := range tests {
		t.Run(tt.user+" "+tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), tt.method, tt.path, nil)
			if tt.user != "" {
				req.Header.Set("Authorization", "Bearer "+gw.Token("acme", tt.user))
			}
			rec := httptest.NewRecorder()
			svc.ServeHTTP(rec, req)
			require.Equal(t, tt.status, rec.Code, rec.Body.String())
		})
	}
}
