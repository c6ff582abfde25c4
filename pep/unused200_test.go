package pep_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// a-fix12c F1: the late-answer rule ("a 200 read but not used purges the
// token's cached decisions") was keyed on the Cause's type (late, or a
// body read error), not on "a 200 whose decisions were not stored". A 200
// that the client read but threw away for any other reason kept the older
// cached GRANT served (now the Writer handed out with a 200 purges as it
// closes unwritten):
//   - Content-Length shorter than the body: the client reads exactly the
//     declared bytes, no read error, the JSON is cut -> ErrMalformedResponse;
//   - a body past MaxBody -> Malformed;
//   - a body that is not the answer's JSON.
//
// The gateway's newer DENY was read, and the older GRANT was served next.
func TestAUnused200OfAnyKindDropsTheOlderGrant(t *testing.T) {
	t.Parallel()
	deny := `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"}]}`
	cases := map[string]func(w http.ResponseWriter){
		"content-length-lies-short": func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", strconv.Itoa(len(deny)/2))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(deny))
		},
		"body-past-maxbody": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(deny[:len(deny)-1] + `,"pad":"` + strings.Repeat("x", 1<<20) + `"}`))
		},
		"empty-body": func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
		},
		"not-the-answer-json": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"DENY"}`))
		},
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			g := startReference(t)
			c := g.newClient(t, noRetry)
			c.SetToken(g.token(t, "alice"))

			d, err := c.Check(t.Context(), "orders", "read")
			require.NoError(t, err)
			require.True(t, d.Allowed(), "alice reads orders: %v", d.Cause)

			// The permission is taken away; a NoCache re-check is answered
			// DENY in a 200 the client cannot use.
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("Content-Type", "application/json")
				answer(w)
				return true
			})
			d, err = c.Check(t.Context(), "orders", "read", pep.NoCache())
			require.False(t, d.Allowed())
			t.Logf("the unused 200: err=%v cause=%v", err, d.Cause)
			require.Equal(t, http.StatusOK, g.last(t).Status, "the gateway answered 200")

			// The gateway now says DENY plainly; the older GRANT must not be served.
			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(deny))
				return true
			})
			d, err = c.Check(t.Context(), "orders", "read")
			g.setHook(nil)
			require.NoError(t, err)
			assert.False(t, d.Allowed() && d.Cached,
				"the older cached GRANT is served after the client read (and threw away) the gateway's 200 DENY for the pair")
		})
	}
}
