package redisstore

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestFinishIsWonByOneCall: of a writer's concurrent Finish calls on its
// record, exactly one reports that it finished it; so do later ones,
// another writer's and a missing record's: false, without an error. The
// reference server issues a code's tokens only to that one call.
func TestFinishIsWonByOneCall(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	store := NewReplayStore(srv.Client(), "f:")
	settled(t, srv.Client(), store.prefix)
	until, since := time.Now().Add(time.Minute), time.Now()
	mine := testkit.Must(store.RecordOnce(t.Context(), "k", "writer", until, since))(t)
	require.True(t, mine)

	const calls = 8
	var wg sync.WaitGroup
	won := make(chan bool, calls)
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			ok, err := store.Finish(t.Context(), "k", "writer")
			won <- ok
			errs <- err
		})
	}
	wg.Wait()
	close(won)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n := 0
	for ok := range won {
		if ok {
			n++
		}
	}
	require.Equal(t, 1, n, "Finish calls that won the record")

	for _, tc := range []struct{ name, key, writer string }{
		{"finished already", "k", "writer"},
		{"another writer's", "k", "another"},
		{"no record", "none", "writer"},
	} {
		ok := testkit.Must(store.Finish(t.Context(), tc.key, tc.writer))(t, tc.name)
		require.False(t, ok, tc.name)
	}
	mine = testkit.Must(store.RecordOnce(t.Context(), "k", "writer", until, since))(t)
	require.False(t, mine, "a finished record is no one's")
}

// TestReplicasIdenticalConcurrentRedemptionsGetOneToken: the same code
// redemption sent at once to two reference servers sharing Redis, several
// times over (a proxy retrying the POST), is granted once: one 200, every
// other invalid_grant. Before, every redemption that found the spend's
// record its own before the first answer was finished got a token set.
func TestReplicasIdenticalConcurrentRedemptionsGetOneToken(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	store := NewReplayStore(srv.Client(), "t:")
	settled(t, srv.Client(), store.prefix)
	a, b := startCodeServer(t, store), startCodeServer(t, store)
	code := a.code()

	const each = 4
	type answer struct {
		status int
		err    string
		fail   error
	}
	answers := make(chan answer, 2*each)
	var wg sync.WaitGroup
	for _, s := range []*codeServer{a, b} {
		for range each {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+tokenPath, strings.NewReader(url.Values{
					"grant_type": {"authorization_code"}, "client_id": {"web"}, "code": {code},
					"redirect_uri": {retryRedirect}, "code_verifier": {retryVerifier}}.Encode()))
				if err != nil {
					answers <- answer{fail: err}
					return
				}
				req.Host = frontHost
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					answers <- answer{fail: err}
					return
				}
				defer res.Body.Close()
				body, err := io.ReadAll(res.Body)
				var e struct {
					Error string `json:"error"`
				}
				_ = json.Unmarshal(body, &e)
				answers <- answer{status: res.StatusCode, err: e.Error, fail: err}
			})
		}
	}
	wg.Wait()
	close(answers)
	granted := 0
	for ans := range answers {
		require.NoError(t, ans.fail)
		switch ans.status {
		case http.StatusOK:
			granted++
		case http.StatusBadRequest:
			require.Equal(t, "invalid_grant", ans.err)
		default:
			t.Fatalf("a redemption answered %d %s", ans.status, ans.err)
		}
	}
	require.Equal(t, 1, granted, "token sets issued for one code")
}
