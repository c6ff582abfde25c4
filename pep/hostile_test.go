package pep_test

// Regression tests for issue 11: each one reproduces a break or weak point
// that an outside attack found, and fails on the code before its fix.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/internal/gatewaytest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// Break 3: a 401 for one token (junk ones the middleware forwards, say)
// must not stop another token's answers from being cached.
func TestJunkTokensDoNotSwitchTheCacheOff(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	c := e.client("uma", "Bearer")

	stop := make(chan struct{})
	var junk sync.WaitGroup
	var refused atomic.Int64
	for i := range 4 {
		junk.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx := pep.WithToken(context.Background(), fmt.Sprintf("junk-%d-%d", i, n))
				if _, err := c.Check(ctx, "docs", "read"); assert.ErrorIs(t, err, pep.ErrUnauthorized) {
					refused.Add(1)
				}
			}
		})
	}
	hits := 0
	for range 40 {
		d := checked(t, c, "docs", "read")
		require.True(t, d.Allowed())
		if d.Cached {
			hits++
		}
	}
	close(stop)
	junk.Wait()
	assert.Equal(t, 39, hits, "every check after the first is served from the cache")
	assert.Positive(t, refused.Load(), "the junk tokens were refused meanwhile")
}

// Break 4, attack on the rewrite: a resource name cut from a larger string
// (the middleware's RequireFunc cutting it from a long path) must not keep
// that string alive in the cache, whose budget counts only the name.
func TestEntriesDoNotKeepWhatTheirNamesWereCutFrom(t *testing.T) {
	g := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) { faultOK(w) })
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(g.Client()), pep.WithCacheMaxBytes(1<<20))
	c.SetToken(aliceToken)

	const calls = 100
	grown := testkit.HeapGrowth(func() {
		for i := range calls {
			path := fmt.Sprint("orders/", i, "/", strings.Repeat("x", 256<<10))
			resource, _, _ := strings.Cut(path, "/") // shares path's bytes
			d := testkit.Must(c.Check(t.Context(), resource, "read",
				pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: fmt.Sprint("/orders/", i)})))(t)
			require.True(t, d.Allowed())
		}
	})
	require.Equal(t, calls, c.Stats().CacheEntries, "every answer was cached")
	// 100 entries keeping their 256 KiB paths would hold 25 MiB.
	assert.Less(t, grown, int64(4<<20), "the cache keeps copies of the names, not the strings they were cut from")
}

// Break 4: whatever the request context a caller sends, an entry costs a
// bounded amount, and the cache stays within its byte bound.
func TestEntryCostIsNotTheCallersToChoose(t *testing.T) {
	g := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) { faultOK(w) })
	const budget = 4 << 20
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(g.Client()), pep.WithCacheMaxBytes(budget))
	c.SetToken(aliceToken)
	longPath := "/orders/" + strings.Repeat("x", 100<<10)

	const calls = 100
	grown := testkit.HeapGrowth(func() {
		for i := range calls {
			d := testkit.Must(c.Check(t.Context(), "orders", "read",
				pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: fmt.Sprint(longPath, i)})))(t)
			require.True(t, d.Allowed())
		}
	})
	s := c.Stats()
	assert.Equal(t, calls, s.CacheEntries, "every answer was cached")
	assert.LessOrEqual(t, s.CacheBytes, int64(budget))
	assert.Less(t, s.CacheBytes/int64(s.CacheEntries), int64(2<<10), "an entry counts well under 2 KiB")
	// 100 entries keyed by 100 KiB paths would hold 10 MiB.
	assert.Less(t, grown, int64(2<<20), "the cache keeps digests, not the paths")
	for i := range 3 { // and a digest finds the same context again
		d := testkit.Must(c.Check(t.Context(), "orders", "read",
			pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: fmt.Sprint(longPath, i)})))(t)
		assert.True(t, d.Cached)
	}
	d := testkit.Must(c.Check(t.Context(), "orders", "read",
		pep.WithRequestContext(pep.RequestContext{Method: "POST", Path: fmt.Sprint(longPath, 0)})))(t)
	assert.False(t, d.Cached, "another context is another entry")
}

func TestCacheByteBoundEvicts(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, pep.WithCacheMaxBytes(16<<10))
	c.SetToken(g.token(t, "alice"))
	for i := range 100 {
		testkit.Must(c.Check(t.Context(), "orders", "read",
			pep.WithRequestContext(pep.RequestContext{Path: fmt.Sprint("/orders/", i)})))(t)
	}
	s := c.Stats()
	assert.LessOrEqual(t, s.CacheBytes, int64(16<<10))
	assert.Less(t, s.CacheEntries, 100)
	assert.Positive(t, s.CacheEvictions)
}

// Break 5: a gateway whose answer quotes the token, at the HTTP level or in
// any escaping, gets none of it into an error, an event, a result, Stats or
// a log line (at Debug, which logs every request) of any call; nor does the
// reference server's granted path (TestTokenNeverLeaks). What the
// redaction withholds is internal/transport's (TestRedact).
func TestTokenEchoesNeverReachAString(t *testing.T) {
	t.Parallel()
	// A token whose escaped forms differ from it.
	const secret = "Zq8+Kd/v3Rm9xW2pL7tN4bY6cQ1hJ5sF0gE=="
	escapedURL := url.QueryEscape(secret)
	escapedJSON, _ := json.Marshal(secret)
	jsonU := strings.NewReplacer("+", `\u002b`, "/", `\u002f`).Replace(secret)
	partial := secret[5:25]

	rawAnswer := func(resp string) func(t *testing.T) (string, string) {
		return func(t *testing.T) (string, string) { return gatewaytest.Start(t, gatewaytest.Raw(resp)).URL, secret }
	}
	body := func(status int, b string) func(t *testing.T) (string, string) {
		return func(t *testing.T) (string, string) {
			return gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+partial+`"`)
				gatewaytest.Answer(status, "application/json", b)(w, nil)
			}).URL, secret
		}
	}
	tests := []struct {
		name    string
		gateway func(t *testing.T) (url, token string)
	}{
		{"TestTokenNeverLeaks", func(t *testing.T) (string, string) { // granted: alice reads orders
			g := startReference(t)
			return g.URL, g.token(t, "alice")
		}},
		{"malformed status line", rawAnswer("HTTP/1.1 2x0 " + secret + "\r\n\r\n")},
		{"malformed header", rawAnswer("HTTP/1.1 200 OK\r\n" + secret + "\r\n\r\n")},
		{"malformed chunked body", rawAnswer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + secret + "\r\n")},
		{"verbatim in a 400", body(400, `{"error":"`+secret+`","message":"`+secret+`"}`)},
		{"URL-escaped in a 403", body(403, `{"error":"Forbidden","message":"token=`+escapedURL+`"}`)},
		{"JSON-escaped in a 401", body(401, `{"error":"Unauthorized","message":`+string(escapedJSON)+`}`)},
		{"unicode-escaped in a 503", body(503, `{"error":"x","message":"`+jsonU+`"}`)},
		{"partial in a 400", body(400, `{"error":"Bad Request","message":"bad token `+partial+`..."}`)},
		{"in an unknown status", body(200, `{"status":"`+secret+`","permissions":[]}`)},
		{"as a member name", body(200, `{"status":"GRANT","permissions":[],"`+jsonU+`":1,"`+jsonU+`":2}`)},
		{"an unparseable body holding it", body(200, secret)},
		{"in a pair status", body(200, `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"`+partial+`"}]}`)},
		{"base64 in a 403", body(403, `{"error":"Forbidden","message":"token `+base64.StdEncoding.EncodeToString([]byte(secret))+` refused"}`)},
		{"hex in a 403", body(403, `{"error":"Forbidden","message":"token `+hex.EncodeToString([]byte(secret))+` refused"}`)},
		{"escaped twice in a 403", body(403, `{"error":"Forbidden","message":"token=`+url.QueryEscape(escapedURL)+`"}`)},
		{"escapes broken by invalid UTF-8", func(t *testing.T) (string, string) {
			var b strings.Builder
			for i := 0; i < len(secret); i++ {
				h := fmt.Sprintf("%02X", secret[i])
				b.WriteString("%" + h[:1] + "\xff" + h[1:])
			}
			return gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+b.String()+`"`)
				gatewaytest.Answer(http.StatusUnauthorized, "application/json", `{"error":"Unauthorized"}`)(w, nil)
			}).URL, secret
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			var rec recorder
			gw, token := tt.gateway(t)
			c := testkit.Must(hangguard.NewPep(gw, testRealm, testClient, fastRetry,
				pep.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
				pep.WithEventHandler(rec.handle)))(t)
			c.SetToken(token)
			d, texts := everyCallsTexts(t, c)
			assert.Equal(t, token != secret, d.Allowed(), "only the reference server grants")
			require.NotEmpty(t, logs.String(), "the debug logger saw the calls")
			texts = append(texts, logs.String())
			rec.mu.Lock()
			for _, ev := range rec.evs {
				texts = append(texts, errText(ev.Err))
			}
			rec.mu.Unlock()
			for _, s := range texts {
				requireNoEcho(t, s, token)
			}
		})
	}
}

// everyCallsTexts makes every call of c that sends its token and returns
// the Check's decision and what a caller can read of each call: errors,
// results, and Stats.
func everyCallsTexts(t *testing.T, c *pep.Client) (pep.Decision, []string) {
	t.Helper()
	d, err := c.Check(t.Context(), "orders", "read")
	texts := []string{errText(err), errText(d.Cause), fmt.Sprintf("%+v %v", d, d)}
	r, err := c.CheckMany(t.Context(), []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}})
	texts = append(texts, errText(err), fmt.Sprintf("%+v", r))
	perms, err := c.ListGranted(t.Context(), nil)
	texts = append(texts, errText(err), fmt.Sprintf("%+v", perms))
	_, err = c.Organizations(t.Context())
	return d, append(texts, errText(err), fmt.Sprintf("%+v", c.Stats()))
}

// requireNoEcho fails when s holds any 12 consecutive characters of the
// token, verbatim, URL-escaped or JSON-escaped, or any 16 consecutive
// characters of its base64 or hex forms.
func requireNoEcho(t *testing.T, s, token string) {
	t.Helper()
	for _, enc := range []string{base64.StdEncoding.EncodeToString([]byte(token)), hex.EncodeToString([]byte(token))} {
		for i := 0; i+16 <= len(enc); i++ {
			require.NotContains(t, s, enc[i:i+16], "an encoding of the token leaked")
		}
	}
	for _, form := range []func(string) string{
		func(x string) string { return x },
		url.QueryEscape,
		url.PathEscape,
		func(x string) string { b, _ := json.Marshal(x); return strings.Trim(string(b), `"`) },
	} {
		for i := 0; i+12 <= len(token); i++ {
			require.NotContains(t, s, form(token[i:i+12]), "the token leaked")
		}
	}
}

// watchDeadline starts a timer of d and returns what reports when a
// goroutine waiting for it woke: the moment the scheduler let a goroutine
// act on a deadline of d, which a loaded machine makes later than d. It
// waits for the timer if it has not fired yet.
func watchDeadline(d time.Duration) func() time.Time {
	woke := make(chan time.Time, 1)
	timer := time.AfterFunc(d, func() { woke <- time.Now() })
	return func() time.Time {
		if timer.Stop() {
			return time.Time{} // the call returned before the deadline
		}
		return <-woke
	}
}

// Break 6 and rule 10: callers of every kind share requests to a gateway
// that never answers; each returns by its own deadline, whatever the others
// do. The callers start one after the other, so that each could join a
// request that another, later caller started.
func TestEveryCallerKeepsItsOwnDeadline(t *testing.T) {
	t.Parallel()
	g := gatewaytest.Start(t, func(_ http.ResponseWriter, r *http.Request) { gatewaytest.Hold(r) })
	const timeout = 300 * time.Millisecond
	c := mustPep(t, g.URL, testRealm, testClient, noRetry, pep.WithTimeout(timeout), pep.WithHTTPClient(g.Client()))
	c.SetToken(aliceToken)

	type caller struct {
		start    time.Duration
		deadline time.Duration // 0: context.Background, bounded by the client's timeout
	}
	callers := []caller{
		{0, 100 * time.Millisecond},
		{20 * time.Millisecond, 0},
		{120 * time.Millisecond, 0},
		{150 * time.Millisecond, 50 * time.Millisecond},
		{200 * time.Millisecond, time.Hour},
		{250 * time.Millisecond, 0},
	}
	var wg sync.WaitGroup
	for i, cl := range callers {
		wg.Go(func() {
			time.Sleep(cl.start) // the scenario: staggered arrivals, not synchronisation
			ctx := context.Background()
			limit := timeout
			if cl.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, cl.deadline)
				defer cancel()
				limit = min(limit, cl.deadline)
			}
			// A sibling context with the same limit shows when this
			// goroutine's scheduler could first have seen the deadline:
			// on a loaded machine, later than the deadline itself.
			seen := watchDeadline(limit)
			began := time.Now()
			d, err := c.Check(ctx, "orders", "read")
			returned := time.Now()
			assert.NoError(t, err)
			assert.False(t, d.Allowed())
			assert.ErrorIs(t, d.Cause, pep.ErrUnavailable)
			due := began.Add(limit)
			if w := seen(); w.After(due) {
				due = w
			}
			assert.True(t, returned.Before(due.Add(50*time.Millisecond)),
				"caller %d returned %v after its deadline (the scheduler saw it %v late)",
				i, returned.Sub(began.Add(limit)), due.Sub(began.Add(limit)))
		})
	}
	wg.Wait()
}

// Break 7: decoding a hostile 1 MiB answer costs memory in proportion to
// it, not tens of times more.
func TestHostileBodiesCostTheirSize(t *testing.T) {
	const size = 1 << 20
	pad := func(prefix, unit, suffix string) string {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	entry := `{"resource":"r","scope":"s","status":"GRANT"},`
	bodies := map[string]string{
		"open braces":          strings.Repeat("{", size),
		"open brackets":        strings.Repeat("[", size),
		"empty permissions":    pad(`{"status":"GRANT","permissions":[`, "{},", "{}]}"),
		"pairs nobody asked":   pad(`{"status":"GRANT","permissions":[`, entry, `{"resource":"r","scope":"s","status":"GRANT"}]}`),
		"nested unknown":       pad(`{"status":"GRANT","x":`, "[", ""),
		"one long string":      pad(`{"status":"GRANT","permissions":[],"x":"`, "a", `"}`),
		"many unknown members": pad(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT",`, `"a":{},`, `"b":1}]}`),
		"a listing of distinct pairs": func() string {
			var b strings.Builder
			b.WriteString(`{"status":"GRANT","permissions":[`)
			for i := 0; b.Len() < size-100; i++ {
				fmt.Fprintf(&b, `{"resource":"r%d","scope":"s","status":"GRANT"},`, i)
			}
			b.WriteString(`{"resource":"r","scope":"s","status":"GRANT"}]}`)
			return b.String()
		}(),
		"many distinct unknown members": func() string {
			var b strings.Builder
			b.WriteString(`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"`)
			for i := 0; b.Len() < size-100; i++ {
				fmt.Fprintf(&b, `,"k%d":0`, i)
			}
			b.WriteString(`}]}`)
			return b.String()
		}(),
		"many tenants": pad(`{"status":true,"organization":{"userId":"u","tenants":[`, `{"tenantId":"t"},`, `{"tenantId":"t"}]}}`),
	}
	for name, b := range bodies {
		t.Run(name, func(t *testing.T) {
			var warm atomic.Bool
			g := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) {
				if !warm.Swap(true) {
					faultOK(w)
					return
				}
				gatewaytest.Answer(http.StatusOK, "application/json", b)(w, nil)
			})
			c := mustPep(t, g.URL, testRealm, testClient, noRetry, pep.WithHTTPClient(g.Client()), pep.WithCache(0, 0, 0))
			c.SetToken(aliceToken)
			_, _ = c.Check(t.Context(), "orders", "read") // warm the connection, with a short answer

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d, err := c.Check(t.Context(), "orders", "read")
			_, _ = c.ListGranted(t.Context(), nil)
			_, _ = c.Organizations(t.Context())
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			if name == "many distinct unknown members" {
				assert.True(t, d.Allowed(), "a valid answer, however large")
			} else {
				assert.False(t, d.Allowed())
			}
			// Three calls: reading a body costs about its size on each side
			// of the connection; decoding may add a few times that, not 55.
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(3*8*size))
		})
	}
}

// TestWhichRefusalExpiresTheToken: a 401 that refuses the token expires it
// (ErrUnauthorized, tokenExpired of the token's type, its cached decisions
// purged, no resend): a DPoP-bound token the server no longer takes, even
// when its answer carries a new nonce and asks for it in the body (its
// challenge's invalid_token decides), and a Bearer token refused with a
// DPoP challenge or a DPoP error body, which mean nothing to it (a nonce
// is no cue to resend, and a proof it never sent cannot be what was
// refused: attack F10). A 401 that blames the DPoP proof (rule 9: a clock
// out of step, say), or still asks for a nonce after the one resend, in
// its challenge or in its body (a-dpop13 F2), is no verdict on the token:
// ErrProofRejected, nothing purged, nothing emitted. A 401 to a DPoP
// request that carries a new nonce is resent once with it, unless the
// answer refuses the token, in any of its challenges or in its body.
func TestWhichRefusalExpiresTheToken(t *testing.T) {
	t.Parallel()
	refusal := func(header string, body any, more ...string) gwHook {
		return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
			if header != "" {
				w.Header().Set("WWW-Authenticate", header)
			}
			for _, v := range more {
				w.Header().Add("WWW-Authenticate", v)
			}
			w.Header().Set("DPoP-Nonce", "n-1")
			writeJSON(w, http.StatusUnauthorized, body)
			return true
		}
	}
	challenge := func(header string) gwHook {
		return refusal(header, map[string]string{"error": "Unauthorized", "message": "refused"})
	}
	// raw answers with status, header and body as written, with a new
	// nonce.
	raw := func(status int, header, body string) gwHook {
		return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
			w.Header().Set("WWW-Authenticate", header)
			w.Header().Set("DPoP-Nonce", "n-1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return true
		}
	}
	inBody := map[string]string{"error": "use_dpop_nonce", "error_description": "nonce required in the DPoP proof"}
	// resentToRefusal answers the first request with a 400 asking a nonce
	// in a body the client cannot read whole (a raw tab), and every
	// request after it, the resend with the nonce first, with status
	// refusing the token: a gateway that checks the nonce, then the token.
	resentToRefusal := func(status int) gwHook {
		var n atomic.Int32
		return func(w http.ResponseWriter, _ *http.Request, _ int) bool {
			w.Header().Set("Content-Type", "application/json")
			if n.Add(1) == 1 {
				w.Header().Set("DPoP-Nonce", "n-1")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte("{\"error\":\"Bad Request\",\"message\":\"nonce\trequired\"}"))
				return true
			}
			w.Header().Set("WWW-Authenticate", `DPoP algs="ES256", error="invalid_token", error_description="revoked"`)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"invalid_token","message":"the token was revoked"}`))
			return true
		}
	}
	const escapedRefusal = "{\"message\":\"proof for GET\thttps://api/\",\"error\":\"invalid\\u005ftoken\"}"
	tests := []struct {
		name    string
		dpop    bool
		hook    gwHook // nil: the server refuses the token, expired by then
		expired bool   // else the proof is refused
		sends   int    // the requests of the two calls
	}{
		{"a DPoP token the server refuses", true, nil, true, 2},
		{"a DPoP token refused with a new nonce, asked for in the body", true,
			refusal(`DPoP algs="ES256", error="invalid_token"`, inBody), true, 2},
		// a-dpop14 F2: one verdict from every challenge value and the
		// body, read by the resend and the blame alike; the signal
		// refusing the token wins over the nonce request.
		{"a DPoP token refused in a second challenge after a nonce request", true,
			refusal(`DPoP error="use_dpop_nonce"`, map[string]string{"error": "Unauthorized"}, `DPoP error="invalid_token"`), true, 2},
		{"a DPoP token refused in the body under a nonce challenge", true,
			refusal(`DPoP error="use_dpop_nonce"`, map[string]string{"error": "invalid_token"}), true, 2},
		// a-fix14b: a 401 naming no DPoP error refuses the token and is
		// not resent, new nonce or not (F2: the resend's 503 replaced the
		// refusal); every "error" member of the body counts, by its exact
		// name (F1: a later "Error" hid the invalid_token).
		{"a DPoP token refused with a new nonce and no DPoP signal", true, refusal(`DPoP realm="gw"`, map[string]string{"error": "Unauthorized"}), true, 2},
		{"a DPoP token refused in the body before another error member", true,
			refusal(`DPoP error="use_dpop_nonce"`, json.RawMessage(`{"error":"invalid_token","Error":"use_dpop_nonce"}`)), true, 2},
		// a-dpop15 F1: a body the client cannot read whole is unclear.
		// One naming invalid_token anywhere refuses the token, unresent;
		// another, asking a nonce, is resent once, and the resend's same
		// refusal leaves it standing: an unclear 401 refuses the token.
		{"a DPoP token refused in the body after a raw tab, under a nonce challenge", true,
			raw(401, `DPoP realm="gw", error="use_dpop_nonce"`, "{\"message\":\"proof for GET\thttps://api/\",\"error\":\"invalid_token\"}"), true, 2},
		{"a DPoP token refused in the body after a raw tab and a nonce request", true,
			raw(401, `DPoP realm="gw", algs="ES256"`, "{\"error\":\"use_dpop_nonce\",\"message\":\"a\tb\",\"error\":\"invalid_token\"}"), true, 2},
		{"a DPoP token refused in the body after a leading zero, under a nonce challenge", true,
			raw(401, `DPoP error="use_dpop_nonce"`, `{"code":0401,"error":"invalid_token"}`), true, 2},
		{"a DPoP token refused in the body past MaxBody, under a nonce challenge", true,
			raw(401, `DPoP error="use_dpop_nonce"`, `{"trace":"`+strings.Repeat("x", 1<<20)+`","error":"invalid_token"}`), true, 3},
		// a-dpop15 F3: a 400 naming invalid_token, in its challenge or its
		// body, refuses the token as a 401 does, unresent.
		{"a DPoP token refused by a 400's challenge", true,
			raw(400, `DPoP realm="gw", error="invalid_token", error_description="token revoked"`, `{"error":"Bad Request"}`), true, 2},
		{"a DPoP token refused by a 400's body", true,
			raw(400, `DPoP realm="gw", algs="ES256"`, `{"error":"invalid_token","error_description":"token revoked"}`), true, 2},
		// a-fix15 F2: invalid_token escaped in JSON ("invalid\u005ftoken")
		// in a body not read whole refuses the token as it does read whole.
		{"a DPoP token refused by a 400's body, escaped, after a raw tab", true,
			raw(400, `DPoP realm="gw", algs="ES256"`, escapedRefusal), true, 2},
		{"a DPoP token refused by a 403's body, escaped, after a raw tab", true,
			raw(403, `DPoP realm="gw", algs="ES256"`, escapedRefusal), true, 2},
		// a-fix15 F4: an unclear 400 with a new nonce is resent; the
		// resend's refusal of the token is the more severe reading and
		// wins (it was dropped for the 400, which refuses nothing). The
		// second call's one request is refused alike.
		{"a DPoP token refused by a 401 to the resend of an unclear 400", true, resentToRefusal(http.StatusUnauthorized), true, 3},
		{"a DPoP token refused by a 403 to the resend of an unclear 400", true, resentToRefusal(http.StatusForbidden), true, 3},
		// a-fix15 F1: a WWW-Authenticate split over several lines reads as
		// the lines joined with ", " (RFC 9110 section 5.3): a parameter
		// starting a line is the challenge's before it. A refusal so split
		// is not hidden behind the body's nonce request...
		{"a DPoP token refused in a challenge split over two lines, a nonce asked for in the body", true,
			refusal(`DPoP algs="ES256"`, map[string]string{"error": "use_dpop_nonce"}, `error="invalid_request", error_description="token audience mismatch"`), true, 2},
		{"a Bearer token refused with a nonce challenge", false, challenge(`DPoP error="use_dpop_nonce"`), true, 2},
		{"a Bearer token refused with a proof challenge", false, challenge(`DPoP algs="ES256", error="invalid_dpop_proof"`), true, 2},
		{"a Bearer token refused with a nonce asked for in the body", false, refusal("", inBody), true, 2},
		// The first call is resent once, with the nonce n-1 it was given.
		{"a DPoP proof refused", true, challenge(`DPoP algs="ES256", error="invalid_dpop_proof", error_description="iat is too far in the future"`), false, 3},
		{"a DPoP nonce asked for in the body again and again", true, refusal("", inBody), false, 3},
		{"a DPoP nonce asked for in the body under a challenge without error", true, refusal(`DPoP algs="ES256 PS256"`, inBody), false, 3},
		// a-dpop15 F2: nonce requests the parse read as no DPoP signal, a
		// refusal: a bare word after a non-token character is no scheme,
		// an unreadable parameter is skipped, a BOM before the body too.
		{"a DPoP nonce asked for after an unquoted algs list", true, challenge(`DPoP algs=ES256 PS256, error="use_dpop_nonce"`), false, 3},
		{"a DPoP nonce asked for after an unquoted realm with a slash", true, challenge(`DPoP realm=api.example.com/v1, error="use_dpop_nonce"`), false, 3},
		{"a DPoP nonce asked for after an unquoted error_uri", true, challenge(`DPoP error_uri=https://gw.example/errors, error="use_dpop_nonce"`), false, 3},
		{"a DPoP nonce asked for in a body behind a BOM", true, raw(401, `DPoP realm="gw"`, "\ufeff{\"error\":\"use_dpop_nonce\"}"), false, 3},
		// a-fix15 F1: ...and a nonce request or a proof refusal so split
		// retires no valid token.
		{"a DPoP nonce asked for in a challenge split after its first parameter", true,
			refusal(`DPoP algs="ES256"`, map[string]string{"error": "Unauthorized"}, `error="use_dpop_nonce", error_description="nonce required"`), false, 3},
		{"a DPoP nonce asked for in a challenge split after a realm", true,
			refusal(`DPoP realm="gw"`, map[string]string{"error": "Unauthorized"}, `error="use_dpop_nonce"`), false, 3},
		{"a DPoP proof refused in a challenge split after its first parameter", true,
			refusal(`DPoP algs="ES256"`, map[string]string{"error": "Unauthorized"}, `error="invalid_dpop_proof"`), false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c, rec, kind := (*pep.Client)(nil), &recorder{}, "Bearer"
			if tt.dpop {
				c, rec, _ = g.dpopClient(t, "alice", nil)
				kind = "DPoP"
			} else {
				c = g.newClient(t, pep.WithEventHandler(rec.handle))
				c.SetToken(g.token(t, "alice"))
			}
			d := checked(t, c, "orders", "read")
			require.True(t, d.Allowed())
			require.Equal(t, 1, c.Stats().CacheEntries)

			if tt.hook == nil {
				g.clock.Advance(time.Hour) // past the token's lifetime
			}
			g.setHook(tt.hook)
			sent := g.count()
			for range 2 {
				_, err := c.Check(t.Context(), "orders", "write")
				if tt.expired {
					require.ErrorIs(t, err, pep.ErrUnauthorized)
					require.NotErrorIs(t, err, pep.ErrProofRejected)
				} else {
					require.ErrorIs(t, err, pep.ErrProofRejected)
					require.NotErrorIs(t, err, pep.ErrUnauthorized, "the token was not refused")
				}
			}
			assert.Equal(t, sent+tt.sends, g.count())
			if tt.expired {
				assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired}, rec.kinds())
				assert.Equal(t, kind, rec.evs[1].TokenType)
				assert.Zero(t, c.Stats().CacheEntries, "the refused token's decisions are purged")
			} else {
				assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "no tokenExpired")
				assert.Equal(t, 1, c.Stats().CacheEntries, "nothing purged")
			}
		})
	}
}

// TestABodyCutByTheDeadlineRetiresNoToken: a-fix15 F3. A 401 to a DPoP
// request whose body is still arriving when the call's deadline passes was
// read as unclear, and an unclear 401 refuses the token: a slow gateway
// retired the client's valid token (tokenExpired, its GRANTs purged).
// "Unclear" comes only from a body the server finished: one the client
// could not finish reading is no verdict on the token unless what came
// refuses it by itself, and the call fails ErrUnavailable.
func TestABodyCutByTheDeadlineRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, challenge, body string
		status                int
		refuses               bool // what came refuses the token: the cut does not hide it
	}{
		{"blaming the proof", `DPoP algs="ES256", error="invalid_dpop_proof", error_description="iat too far in the future"`,
			`{"error":"invalid_dpop_proof","message":"the proof's iat is`, http.StatusUnauthorized, false},
		{"saying nothing of DPoP before the cut", `DPoP algs="ES256"`, `{"message":"the proof's iat is`, http.StatusUnauthorized, false},
		{"a 400 saying nothing before the cut", `DPoP algs="ES256"`, `{"message":"the proof's iat is`, http.StatusBadRequest, false},
		{"a 401 refusing the token in its challenge", `DPoP algs="ES256", error="invalid_token"`, `{"message":"the token was`, http.StatusUnauthorized, true},
		// A 400 or 403 refusing the token, its body cut, was an unavailable
		// gateway and the revoked token's GRANTs stayed (f-verdict15b).
		{"a 400 refusing the token in its challenge", `DPoP algs="ES256", error="invalid_token"`, `{"message":"the token was`, http.StatusBadRequest, true},
		{"a 403 refusing the token in what came of its body", `DPoP algs="ES256"`, `{"error":"invalid_token","message":"the token was`, http.StatusForbidden, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			signer := testkit.Must(dpop.GenerateKey())(t)
			var slow atomic.Bool
			g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
				if !slow.Load() {
					faultOK(w)
					return
				}
				w.Header().Set("WWW-Authenticate", tc.challenge)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
				w.(http.Flusher).Flush()
				gatewaytest.Hold(r) // the rest of the body is late
			})
			rec := &recorder{}
			c := mustPep(t, g.URL, testRealm, testClient, pep.WithEventHandler(rec.handle), pep.WithRetry(0, 0, 0),
				pep.WithHTTPClient(g.Client()))
			c.SetDPoPToken("dpop-bound-token", signer)
			require.True(t, checked(t, c, "orders", "read").Allowed())
			require.Equal(t, 1, c.Stats().CacheEntries)
			slow.Store(true)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			d, err := c.Check(ctx, "orders", "write")
			if err == nil {
				err = d.Cause
			}
			t.Logf("the call's error: %v", err)
			assert.False(t, d.Allowed())
			if tc.refuses {
				assert.ErrorIs(t, err, pep.ErrUnauthorized, "a refusal of the token that came is not hidden by the cut")
				assert.Zero(t, c.Stats().CacheEntries, "the refused token's GRANT is purged")
				// Its delivery is bounded by the call's deadline, which has
				// passed: it comes after the call returns.
				assert.Eventually(t, func() bool { return slices.Equal(rec.kinds(), []events.Kind{events.TokenSet, events.TokenExpired}) },
					10*time.Second, time.Millisecond, "tokenExpired for the refused token: %v", rec.kinds())
				return
			}
			assert.ErrorIs(t, err, pep.ErrUnavailable, "a body cut by the deadline is an unavailable gateway")
			assert.NotErrorIs(t, err, pep.ErrUnauthorized, "a body cut by the deadline refuses no token")
			assert.Equal(t, 1, c.Stats().CacheEntries, "the valid token's GRANT is not purged for a slow body")
			assert.Equal(t, []events.Kind{events.TokenSet}, rec.kinds(), "no tokenExpired for a slow body")
		})
	}
}

// Rule 11: cookies are never stored or sent, whatever jar the caller's
// *http.Client has.
func TestCookiesAreNeverSent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var cookies []string
	g := gatewaytest.Start(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookies = append(cookies, r.Header.Get("Cookie"))
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "alice-session", Path: "/"})
		faultOK(w)
	})
	jar := &memoryJar{}
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(&http.Client{Jar: jar}), pep.WithCache(0, 0, 0))
	c.SetToken(aliceToken)
	for _, tok := range []string{aliceToken, bobToken} {
		checkedIn(t, c, pep.WithToken(t.Context(), tok), "orders", "read")
	}
	assert.Equal(t, []string{"", ""}, cookies)
	assert.Zero(t, jar.sets.Load(), "the caller's jar was not touched")
}

type memoryJar struct{ sets atomic.Int32 }

func (j *memoryJar) SetCookies(*url.URL, []*http.Cookie) { j.sets.Add(1) }
func (j *memoryJar) Cookies(*url.URL) []*http.Cookie {
	return []*http.Cookie{{Name: "session", Value: "someone-else"}}
}

// A slow tokenExpired handler does not hold the call that caused it past
// the end of the call's context.
//
// The context ends when the test says so, once the handler runs (the 401
// has come back), not on a timer: a 50 ms deadline, as the test had, passed
// on a loaded machine before the 401 arrived, and the call failed closed
// on its deadline without ever meeting the handler.
func TestSlowHandlerDoesNotHoldTheCall(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	handled := make(chan struct{})
	c := g.newClient(t, noRetry, pep.WithEventHandler(func(ev events.Event) {
		if ev.Kind == events.TokenExpired {
			close(entered)
			<-release // as long as the test wants
			close(handled)
		}
	}))
	c.SetToken(g.expiredToken(t, "alice"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	returned := make(chan error, 1)
	go func() {
		_, err := c.Check(ctx, "orders", "read")
		returned <- err
	}()
	<-entered // the gateway refused the token; the call is delivering tokenExpired
	cancel()  // the call's context ends, as its deadline passing would end it
	var err error
	select {
	case err = <-returned:
	case <-time.After(time.Minute): // a hang guard, not a threshold
		close(release)
		t.Fatal("Check did not return when its context ended: the slow handler holds it")
	}
	require.ErrorIs(t, err, pep.ErrUnauthorized)
	select {
	case <-handled:
		t.Fatal("the handler finished before Check returned")
	default:
	}
	close(release)
	<-handled
}

// The byte bound is honest for the middleware's usual traffic, one entry
// per caller's token: the heap grows by about what Stats counts, not
// several times more.
func TestCacheBytesAreHonest(t *testing.T) {
	g := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) { faultOK(w) })
	c := mustPep(t, g.URL, testRealm, testClient, pep.WithHTTPClient(g.Client()), pep.WithCache(100_000, time.Hour, time.Hour))
	tokens := make([]string, 3000)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("eyJhbGciOiJFUzI1NiJ9.caller-%06d.%s", i, strings.Repeat("s", 86))
	}
	// Warm up the connection pool and the client's own structures.
	checkedIn(t, c, pep.WithToken(t.Context(), "warm-up-token"), "orders", "read")
	grown := float64(testkit.HeapGrowth(func() {
		for _, tok := range tokens {
			d := checkedIn(t, c, pep.WithToken(t.Context(), tok), "orders", "read")
			require.True(t, d.Allowed())
		}
	}))
	s := c.Stats()
	require.Equal(t, len(tokens)+1, s.CacheEntries)
	counted := float64(s.CacheBytes) * float64(len(tokens)) / float64(len(tokens)+1)
	t.Logf("heap grew %.0f bytes for %d entries; counted %.0f (%.2f)", grown, len(tokens), counted, grown/counted)
	assert.Less(t, grown, 1.25*counted)
}

// A length the gateway declares is not memory the client spends: a body
// that claims 1 MiB and holds 5 bytes costs what arrives.
func TestDeclaredLengthIsNotTrusted(t *testing.T) {
	g := gatewaytest.Start(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(1<<20))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"st`))
		// The handler returns: the server closes the short body.
	})
	c := mustPep(t, g.URL, testRealm, testClient, noRetry, pep.WithHTTPClient(g.Client()))
	c.SetToken(aliceToken)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := c.Check(t.Context(), "orders", "read")
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.False(t, d.Allowed())
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<10))
}
