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

// a-client12b F1 in authzen (the same transport.Exchanger.answer): a 401
// whose status and challenge were read but whose body was cut was taken
// for an unavailable PDP; the refused token's cached GRANT stayed served.
func TestA401WithACutBodyRetiresTheToken(t *testing.T) {
	t.Parallel()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
		mockserver.WithAccessTokenAlgorithm("ES256"))
	var refuse atomic.Bool
	base := srv.Client().Transport
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		if !refuse.Load() || r.Method != http.MethodPost {
			return base.RoundTrip(r)
		}
		// The PDP's 401 arrives, and the connection is lost mid-body.
		h := http.Header{}
		h.Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="the token was revoked"`)
		h.Set("Content-Type", "application/json")
		return &http.Response{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized", Header: h,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: 100, Request: r,
			Body: io.NopCloser(io.MultiReader(strings.NewReader(`{"error":`), errReader{io.ErrUnexpectedEOF}))}, nil
	})

	c, err := hangguard.NewAuthZEN(srv.URL+"/realms/todo", authzen.WithHTTPClient(&http.Client{Transport: rt}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	c.SetToken(srv.Token("todo", "service-account-todo-api", mockserver.TokenLifetime(time.Hour)))

	d, err := c.Evaluate(t.Context(), todoRead)
	require.NoError(t, err)
	require.True(t, d.Allowed(), "the PDP grants: %v", d.Cause)

	refuse.Store(true)
	_, err = c.Evaluate(t.Context(), todoRead, authzen.NoCache())
	t.Logf("the cut 401: %v", err)
	refuse.Store(false)

	d, err = c.Evaluate(t.Context(), todoRead)
	assert.False(t, d.Allowed() && d.Cached,
		"the refused token's cached GRANT is still served after the client read the PDP's 401 for it (err=%v)", err)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
