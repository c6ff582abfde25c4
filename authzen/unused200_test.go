package authzen_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// a-fix12c F1 in authzen: a 200 the client read and threw away because
// its body is not a usable answer (cut by a proxy with no read error, or
// past MaxBody) kept the token's older cached GRANT served, although the
// PDP's newer answer (a DENY) was read.
func TestAUnused200DropsTheOlderGrant(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"json-cut-without-read-error": `{"decision":false`,
		"past-maxbody":                `{"decision":false,"context":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
				mockserver.WithAccessTokenAlgorithm("ES256"))
			var swap atomic.Bool
			base := srv.Client().Transport
			rt := roundTripper(func(r *http.Request) (*http.Response, error) {
				if !swap.Load() || r.Method != http.MethodPost {
					return base.RoundTrip(r)
				}
				return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
					Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1, Request: r,
					Body: io.NopCloser(strings.NewReader(body))}, nil
			})
			c, err := hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(&http.Client{Transport: rt}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			c.SetToken(srv.Token("todo", "service-account-todo-api", mockserver.TokenLifetime(time.Hour)))

			d, err := c.Evaluate(t.Context(), todoRead)
			require.NoError(t, err)
			require.True(t, d.Allowed(), "the PDP grants: %v", d.Cause)

			swap.Store(true)
			d, err = c.Evaluate(t.Context(), todoRead, authzen.NoCache())
			t.Logf("the unused 200: err=%v cause=%v", err, d.Cause)
			d, err = c.Evaluate(t.Context(), todoRead)
			swap.Store(false)
			assert.False(t, d.Allowed() && d.Cached, "the token's older cached GRANT served after the PDP's 200 DENY was read and thrown away (err=%v)", err)
		})
	}
}
