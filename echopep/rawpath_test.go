package echopep_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/fstest"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/echopep"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// grantOnly grants the pairs on the named resources and denies the rest.
type grantOnly map[string]bool

func (g grantOnly) CheckMany(_ context.Context, rs []pep.Resource, _ ...pep.CallOption) (pep.Result, error) {
	res := pep.Result{Status: pep.Grant}
	for _, r := range rs {
		for _, s := range r.Scopes {
			st := pep.Grant
			if !g[r.Name] {
				st, res.Status = pep.Deny, pep.Deny
			}
			res.Decisions = append(res.Decisions, pep.Decision{Resource: r.Name, Scope: s, Status: st})
		}
	}
	return res, nil
}

// TestAnEscapedLetterSkipsNoRouteRule: echo routes on the path as sent
// (RawPath), FileServer serves the decoded path. With two route rules (the
// private folder needs "private", the rest "files"), a caller granted
// "files" only who sends "/files/%70rivate/key" is refused (400), where it
// was routed to the "files" rule and served private/key (a-client10b F1,
// with echo's default router).
func TestAnEscapedLetterSkipsNoRouteRule(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"private/key": {Data: []byte("THE PRIVATE KEY")}, "public/x": {Data: []byte("public")}}
	files := echo.WrapHandler(http.StripPrefix("/files", http.FileServer(http.FS(fsys))))
	gw := grantOnly{"files": true}
	e := echo.New()
	e.GET("/files/private/*", files, echopep.Require(gw, "private", "read"))
	e.GET("/files/*", files, echopep.Require(gw, "files", "read"))
	srv := testkit.Serve(t, e)
	do := func(p string) (int, string) {
		req := testkit.Must(http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+p, nil))(t)
		req.Header.Set("Authorization", "Bearer abcdefghijklmnopqrstuvwxyz")
		resp := testkit.Must(srv.Client().Do(req))(t)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	st, body := do("/files/public/x")
	require.Equal(t, http.StatusOK, st, body)
	st, _ = do("/files/private/key")
	require.Equal(t, http.StatusForbidden, st, "the private rule holds for the path as spelt")
	st, body = do("/files/%70rivate/key")
	require.Equal(t, http.StatusBadRequest, st, "a caller without \"private\" read the private folder: %s", body)
	require.NotContains(t, body, "PRIVATE")
}
