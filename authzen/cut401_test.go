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
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// TestACutAnswerCountsForWhatItSays: a-client12b F1 in authzen (the same
// transport.Exchanger.answer): a 401 whose status and challenge were read
// but whose body was cut was taken for an unavailable PDP, and the refused
// token's cached GRANT stayed served. a-fix12b: the first fix purged the
// token's cache for a cut 503 too, which decided nothing, so a failing
// PDP wiped the GRANTs that carry the token through its outage. a-fix12c
// F1: a 200 DENY read and thrown away (cut cleanly, past its bound) left
// the older GRANT served.
func TestACutAnswerCountsForWhatItSays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		cut    bool // the connection is lost after the body
		kept   bool // the token's cached GRANT is still served after it
	}{
		{name: "401 cut", status: http.StatusUnauthorized, header: http.Header{"Www-Authenticate": {`Bearer error="invalid_token", error_description="the token was revoked"`}}, body: `{"error":`, cut: true},
		{name: "503 cut", status: http.StatusServiceUnavailable, header: http.Header{}, body: `{"error":`, cut: true, kept: true},
		{name: "200 cut cleanly", status: http.StatusOK, header: http.Header{}, body: `{"decision":false`},
		{name: "200 past the bound of a body", status: http.StatusOK, header: http.Header{}, body: `{"decision":false,"context":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
				mockserver.WithAccessTokenAlgorithm("ES256"))
			var cut atomic.Bool
			base := srv.Client().Transport
			rt := roundTripper(func(r *http.Request) (*http.Response, error) {
				if !cut.Load() || r.Method != http.MethodPost {
					return base.RoundTrip(r)
				}
				body := io.Reader(strings.NewReader(tc.body))
				if tc.cut {
					body = io.MultiReader(body, errReader{io.ErrUnexpectedEOF})
				}
				return &http.Response{StatusCode: tc.status, Status: http.StatusText(tc.status), Header: tc.header,
					Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: -1, Request: r, Body: io.NopCloser(body)}, nil
			})
			c := mustAuthZEN(t, srv.URL+"/realms/todo", authzen.WithHTTPClient(&http.Client{Transport: rt}))
			c.SetToken(srv.Token("todo", "service-account-todo-api", mockserver.TokenLifetime(time.Hour)))

			d, err := c.Evaluate(t.Context(), todoRead)
			require.NoError(t, err)
			require.True(t, d.Allowed(), "the PDP grants: %v", d.Cause)

			cut.Store(true)
			_, err = c.Evaluate(t.Context(), todoRead, authzen.NoCache())
			t.Logf("the cut %d: %v", tc.status, err)
			d, err = c.Evaluate(t.Context(), todoRead)
			cut.Store(false)
			assert.Equal(t, tc.kept, d.Allowed() && d.Cached, "the token's cached GRANT served after a cut %d (err=%v)", tc.status, err)
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
