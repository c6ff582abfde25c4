package authzen_test

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// startTodo starts the reference server with the Todo scenario and
// returns it and a client of its PDP with opts, holding the Todo API's
// token. The server signs access tokens ES256, with the P-256 key every
// realm has from the start, rather than RS256 (the default) with a 2048-bit
// RSA key made on the realm's first token, 70 to 110 ms of CPU under -race
// per server: the client never looks inside the token, and
// TestTodoReferenceServer runs on the default server. Each server still
// makes keys of its own (shared keys would make one accept another's
// tokens).
func startTodo(t *testing.T, opts ...authzen.Option) (*mockservertest.Server, *authzen.Client) {
	t.Helper()
	srv := mockservertest.Start(t, mockserver.WithFixtureFile("testdata/todo/orgauthz-fixture.json"),
		mockserver.WithAccessTokenAlgorithm("ES256"))
	c := mustAuthZEN(t, srv.URL+"/realms/todo", append([]authzen.Option{authzen.WithHTTPClient(srv.Client())}, opts...)...)
	c.SetToken(srv.Token("todo", "service-account-todo-api"))
	return srv, c
}

// TestNewValidates: New refuses what it cannot use and says what to fix,
// for every argument at once, in authzen's name. The rules of each option
// are internal/core's (settings_test.go); a row here shows that an option
// reaches its setting. What a setting does is the core's, held by pep's
// tests (TestTokenEvents, TestCacheByteBoundEvicts, TestCacheBytesAreHonest,
// TestMaxTokenBytesIsTheBound).
func TestNewValidates(t *testing.T) {
	t.Parallel()
	const url = "https://pdp.example.com"
	tests := []struct {
		name     string
		pdp      string
		opts     []authzen.Option
		wantErrs []string // substrings, each must appear
	}{
		{name: "defaults", pdp: url},
		{name: "zero TTLs keep nothing of their kind", pdp: url, opts: []authzen.Option{authzen.WithCache(10, 0, 0)}},
		{name: "empty URL", wantErrs: []string{"authzen: the PDP URL is empty; use an absolute http(s) URL such as https://pdp.example.com"}},
		{name: "user info", pdp: "https://admin:hunter2@pdp.example.com", wantErrs: []string{"authzen: the PDP URL must not hold user information"}},
		{name: "host not ASCII", pdp: "https://\u0130nternal.example", wantErrs: []string{"authzen: the PDP URL has a host that is not ASCII"}},
		{name: "nil http client", pdp: url, opts: []authzen.Option{authzen.WithHTTPClient(nil)},
			wantErrs: []string{"authzen: WithHTTPClient: the *http.Client is nil"}},
		{name: "nil event handler", pdp: url, opts: []authzen.Option{authzen.WithEventHandler(nil)},
			wantErrs: []string{"authzen: WithEventHandler: the handler is nil"}},
		{name: "byte bound no decision fits in", pdp: url, opts: []authzen.Option{authzen.WithCacheMaxBytes(1)},
			wantErrs: []string{"authzen: WithCacheMaxBytes: the byte bound must be at least", "got 1"}},
		{name: "retries that flood the PDP", pdp: url, opts: []authzen.Option{authzen.WithRetry(1<<30, time.Nanosecond, time.Nanosecond)},
			wantErrs: []string{"authzen: WithRetry: max must be from 0 (no retries) to 10, got 1073741824",
				"authzen: WithRetry: minWait must be at least 1ms when retrying, got 1ns"}},
		{name: "cache size past the cache's limit", pdp: url, opts: []authzen.Option{authzen.WithCache(math.MaxInt, time.Second, time.Second)},
			wantErrs: []string{"authzen: WithCache: size must be from 0 (no cache) to 2147483648 entries, got " + strconv.Itoa(math.MaxInt)}},
		{name: "zero token bound", pdp: url, opts: []authzen.Option{authzen.WithMaxTokenBytes(0)},
			wantErrs: []string{"authzen: WithMaxTokenBytes: the bound must be positive"}},
		{name: "an endpoint on no origin", pdp: url, opts: []authzen.Option{authzen.WithEndpoints(authzen.Endpoints{Evaluation: "access/v1"})},
			wantErrs: []string{"authzen: the evaluation endpoint must be a path starting with / or an absolute http(s) URL"}},
		{name: "a query in an endpoint path", pdp: url, opts: []authzen.Option{authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/access/v1/evaluation?api_key=hunter2"})},
			wantErrs: []string{"authzen: the evaluation endpoint must be a path starting with / or an absolute http(s) URL, without user information, query or fragment"}},
		{name: "an empty query in an endpoint path", pdp: url, opts: []authzen.Option{authzen.WithEndpoints(authzen.Endpoints{Evaluations: "/access/v1/evaluations?"})},
			wantErrs: []string{"authzen: the evaluations endpoint must be a path"}},
		{name: "a fragment in an endpoint path", pdp: url, opts: []authzen.Option{authzen.WithEndpoints(authzen.Endpoints{SearchSubject: "/access/v1/search/subject#hunter2"})},
			wantErrs: []string{"authzen: the subject search endpoint must be a path"}},
		{name: "a query in an absolute endpoint", pdp: url, opts: []authzen.Option{authzen.WithEndpoints(authzen.Endpoints{SearchAction: "https://pdp.example.com/search?token=hunter2"})},
			wantErrs: []string{"authzen: the action search endpoint must be a path"}},
		{name: "all at once", opts: []authzen.Option{authzen.WithTimeout(0), authzen.WithBatchSize(0)},
			wantErrs: []string{"PDP URL is empty", "authzen: WithTimeout", "authzen: WithBatchSize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := authzen.New(tt.pdp, tt.opts...)
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				require.NotNil(t, c)
				return
			}
			require.Error(t, err)
			assert.Nil(t, c)
			for _, want := range tt.wantErrs {
				assert.Contains(t, err.Error(), want)
			}
			assert.NotContains(t, err.Error(), "hunter2", "secrets in the URL are not echoed")
			assert.NotContains(t, err.Error(), ": cache:", "the cache package's wording does not show through")
		})
	}
}

// TestBatchSize: WithBatchSize splits an Evaluations call into requests of
// at most that many items, each item decided by its own entry. (The cache
// is on: without one, every permit read before the call's last request
// would be asked again, a-fix15b.)
func TestBatchSize(t *testing.T) {
	t.Parallel()
	_, c := startTodo(t, authzen.WithBatchSize(2))
	items := make([]authzen.Request, 5)
	for i := range items {
		items[i] = todoRead
	}
	items[3] = authzen.Request{ // a denial: Morty may not update Rick's todo
		Subject:  authzen.Subject{Type: "user", ID: "CiRmZDE2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"},
		Action:   authzen.Action{Name: "can_update_todo"},
		Resource: authzen.Resource{Type: "todo", ID: "7240d0db-8ff0-41ec-98b2-34a096273b92", Properties: map[string]any{"ownerID": "rick@the-citadel.com"}},
	}
	ds := evaluatedAll(t, c, authzen.Request{}, items)
	require.Len(t, ds, 5)
	for i, d := range ds {
		require.NoError(t, d.Cause, "item %d", i)
		assert.Equal(t, i != 3, d.Allowed(), "item %d", i)
	}
	assert.Equal(t, uint64(3), c.Stats().PDPRequests, "5 items in requests of 2")
}

// logLines records a client's log lines: level and message.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Level.String()+" "+r.Message)
	return nil
}

func (l *logLines) count(level slog.Level, prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.HasPrefix(line, level.String()+" "+prefix) {
			n++
		}
	}
	return n
}

// TestLogger: WithLogger gets the client's fail-closed decisions: a PDP
// that refuses the client's requests as a whole (a 404: an endpoint it
// does not have) once at Error, however many calls repeat it; a PDP that
// cannot be reached at Warn, and the breaker's changes at Warn.
func TestLogger(t *testing.T) {
	t.Parallel()
	log := &logLines{}
	srv, c := startTodo(t, authzen.WithLogger(slog.New(log)), authzen.WithRetry(0, 0, 0), authzen.WithBreaker(1, time.Hour),
		authzen.WithEndpoints(authzen.Endpoints{Evaluation: "/realms/todo/access/v1/no-such-api", Evaluations: "/realms/todo/access/v1/evaluations"}))
	for range 3 {
		d := evaluated(t, c, todoRead)
		var re *authzen.ResponseError
		require.ErrorAs(t, d.Cause, &re)
		assert.Equal(t, http.StatusNotFound, re.StatusCode)
	}
	assert.Equal(t, 1, log.count(slog.LevelError, "authzen: the PDP refuses this client's requests"))

	srv.Stop()
	ds := evaluatedAll(t, c, authzen.Request{}, []authzen.Request{todoRead})
	require.ErrorIs(t, ds[0].Cause, authzen.ErrUnavailable)
	assert.Equal(t, 1, log.count(slog.LevelWarn, "authzen: failing closed"))
	assert.Equal(t, 1, log.count(slog.LevelWarn, "authzen: circuit breaker changed"))
}

// TestErrorsSayAuthzen: the errors the client returns name authzen and the
// PDP, never pep or a gateway, and match the sentinels pep shares.
func TestErrorsSayAuthzen(t *testing.T) {
	t.Parallel()
	srv, c := startTodo(t, authzen.WithRetry(0, 0, 0), authzen.WithBreaker(1, time.Hour), authzen.WithTimeout(time.Second))
	require.NoError(t, c.Discover(t.Context()))
	srv.Stop()
	d := evaluated(t, c, todoRead)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	assert.True(t, strings.HasPrefix(d.Cause.Error(), "authzen: PDP unavailable: "), d.Cause.Error())
	d = evaluated(t, c, todoRead)
	require.ErrorIs(t, d.Cause, pep.ErrCircuitOpen)
	require.ErrorIs(t, d.Cause, authzen.ErrCircuitOpen)
	assert.Equal(t, "authzen: circuit breaker open", d.Cause.Error())
	assert.Equal(t, authzen.BreakerState(pep.BreakerOpen), c.Stats().Breaker, "Stats reports the breaker")

	c.ClearToken()
	_, err := c.Evaluate(t.Context(), todoRead)
	require.ErrorIs(t, err, pep.ErrNoToken)
	assert.Equal(t, "authzen: no token: call SetToken or SetDPoPToken (or make the client WithoutCredentials, for a PDP that takes none)", err.Error())
	c.SetToken("a token\nwith a newline")
	_, err = c.Evaluate(t.Context(), todoRead)
	require.ErrorIs(t, err, authzen.ErrNoToken)
	assert.Equal(t, "authzen: no token: the token holds characters an HTTP header cannot carry", err.Error())

	require.NoError(t, c.Close())
	_, err = c.Evaluate(t.Context(), todoRead)
	require.ErrorIs(t, err, pep.ErrClosed)
	assert.True(t, strings.HasPrefix(err.Error(), "authzen: the client is closed"), err.Error())
}
