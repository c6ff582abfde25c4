package pep_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// The mistakes everyone makes when wiring a client, against the reference
// server: what Verify says, what a Check decides, and what the log says
// (issue 13). uma may read docs in the corp fixture.
func TestMisconfigurations(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	token := e.gw.Token("corp", "uma")
	// A gateway that hangs up on every request: the shared stand-in keeps
	// its port for the whole test, so no other parallel test's server can
	// take it before the client dials.
	closed := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	}).URL
	tests := []struct {
		name             string
		url, realm       string
		client, resource string
		verify           error // nil: Verify passes
		// What each of three Checks returns: the call's error, its
		// decision's Cause, and the status of the gateway answer that
		// Cause is (0 for none); the log after them holds log logLines
		// times.
		err, cause error
		status     int
		log        string
		logLines   int
	}{
		{name: "all right", url: e.gw.URL, realm: "corp", client: "docs-api", resource: "docs"},
		{name: "wrong path prefix", url: e.gw.URL + "/gateway", realm: "corp", client: "docs-api", resource: "docs",
			verify: pep.ErrWrongGatewayURL, status: http.StatusNotFound, log: "gateway refuses this client's requests", logLines: 1},
		{name: "wrong realm (the gateway refuses a token of another realm)", url: e.gw.URL, realm: "crop", client: "docs-api", resource: "docs",
			verify: pep.ErrUnknownRealm, err: pep.ErrUnauthorized, cause: pep.ErrUnauthorized, status: http.StatusUnauthorized},
		{name: "wrong client", url: e.gw.URL, realm: "corp", client: "docs-apii", resource: "docs",
			verify: pep.ErrUnknownClient, status: http.StatusBadRequest, log: "gateway refuses this client's requests", logLines: 1},
		{name: "misspelt resource", url: e.gw.URL, realm: "corp", client: "docs-api", resource: "dcos",
			cause: pep.ErrNotEvaluated, log: "could not evaluate pairs", logLines: 3},
		{name: "gateway unreachable", url: closed, realm: "corp", client: "docs-api", resource: "docs",
			verify: pep.ErrUnavailable, cause: pep.ErrUnavailable, log: "failing closed", logLines: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			c, err := hangguard.NewPep(tt.url, tt.realm, tt.client, pep.WithHTTPClient(e.gw.Client()), noRetry,
				pep.WithCache(0, 0, 0), pep.WithBreaker(0, 0),
				pep.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			require.NoError(t, err)
			c.SetToken(token)

			err = c.Verify(t.Context())
			if tt.verify == nil {
				require.NoError(t, err)
				require.NoError(t, c.Verify(pep.WithToken(t.Context(), token)), "a per-call token will do")
			} else {
				require.ErrorIs(t, err, tt.verify)
				assert.NotContains(t, err.Error(), token)
			}
			assert.Zero(t, c.Stats().CacheEntries, "Verify caches nothing")

			logs.Reset()
			for range 3 {
				d, err := c.Check(t.Context(), tt.resource, "read")
				if tt.err != nil {
					require.ErrorIs(t, err, tt.err)
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, tt.verify == nil && tt.cause == nil, d.Allowed())
				assert.Equal(t, tt.cause == pep.ErrNotEvaluated, d.Status == pep.Error, "ERROR is the gateway's answer for a name it does not know")
				if tt.cause != nil {
					require.ErrorIs(t, d.Cause, tt.cause)
				}
				if tt.status != 0 {
					var re *pep.ResponseError
					require.ErrorAs(t, d.Cause, &re)
					assert.Equal(t, tt.status, re.StatusCode)
				}
			}
			if tt.log != "" {
				assert.Equal(t, tt.logLines, strings.Count(logs.String(), tt.log), "log:\n%s", logs.String())
			}
			assert.NotContains(t, logs.String(), token)
		})
	}
}

// TestVerifyPassesForAClientOfAnySize: Verify proves the configuration
// whatever the client defines. Client big defines 500 resources of 21
// scopes (10,500 pairs, more than one answer may make the client keep):
// its right configuration passes, and its wrong client ID is still named.
func TestVerifyPassesForAClientOfAnySize(t *testing.T) {
	t.Parallel()
	big := mockserver.FixtureClient{ClientID: "big-api", Secret: "big-secret"}
	scopes := make([]string, 21)
	for i := range scopes {
		scopes[i] = fmt.Sprint("s", i)
	}
	for i := range 500 {
		name := fmt.Sprintf("r%03d", i)
		big.Resources = append(big.Resources, mockserver.FixtureResource{Name: name, Scopes: scopes})
		big.Permissions = append(big.Permissions, mockserver.FixturePermission{
			Name: "users use " + name, Resource: name, Scopes: scopes, Roles: []string{"user"},
		})
	}
	gw := mockservertest.Start(t, mockserver.WithFixture(mockserver.Fixture{Realms: []mockserver.FixtureRealm{{
		Name:    "corp",
		Roles:   []mockserver.FixtureRole{{Name: "user"}},
		Users:   []mockserver.FixtureUser{{Username: "uma", Roles: []string{"user"}}},
		Clients: []mockserver.FixtureClient{big},
	}}}), es256Tokens)
	token := gw.Token("corp", "uma")
	tests := []struct {
		name, client string
		want         error // nil: Verify passes
	}{
		{"right", "big-api", nil},
		{"wrong client", "big-apii", pep.ErrUnknownClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustPep(t, gw.URL, "corp", tt.client, pep.WithHTTPClient(gw.Client()), noRetry)
			c.SetToken(token)
			if tt.want == nil {
				require.NoError(t, c.Verify(t.Context()))
				return
			}
			require.ErrorIs(t, c.Verify(t.Context()), tt.want)
		})
	}
}
