package pep_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httputil"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
	"go.opentelemetry.io/otel/trace"
)

// assertScopeNotLockingOut runs one caller's check of scope (its own,
// chosen, input) against a gateway that answers any request carrying
// marker in its body with status, contentType and body; the client's
// shared token is valid and its GRANT cached. The shared token must not
// be retired.
func assertScopeNotLockingOut(t *testing.T, scope, marker string, status int, contentType, body string) {
	t.Helper()
	g := startReference(t)
	rec := &recorder{}
	c := g.newClient(t, pep.WithEventHandler(rec.handle), pep.WithRetry(1, time.Millisecond, time.Millisecond))
	c.SetToken(g.token(t, "alice"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte(marker)) {
			return false
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
		return true
	})
	_, err := c.Check(t.Context(), "orders", scope)
	assert.NotErrorIs(t, err, pep.ErrUnauthorized,
		"the answer only repeats the scope the caller asked; it is no refusal of the client's token: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a caller's scope name retired the client's shared token: events %v", rec.kinds())
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}

// TestAnEscapedWordRepeatedRetiresNoToken: a caller whose scope is
// invalid\u005ftoken (the escape as text), repeated by a gateway and
// decoded again by the reader, retires no shared token (a-fix17 F1: the
// request-word rule read the request's raw bytes only).
func TestAnEscapedWordRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	const scope = `invalid\u005ftoken`   // the caller's text: a backslash, then u005f
	const marker = `invalid\\u005ftoken` // as the JSON request carries it
	for _, a := range []struct {
		name, ct, body string
	}{
		{"400 plain text", "text/plain; charset=utf-8", "unknown scope: " + scope + "\n"},
		{"400 JSON templated without escaping", "application/json", `{"error":"Bad Request","scope":"` + scope + `"}`},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			assertScopeNotLockingOut(t, scope, marker, http.StatusBadRequest, a.ct, a.body)
		})
	}
}

// TestARepeatedWordThroughARebuildingTransportRetiresNoToken: behind a
// user's transport that rebuilds the request (the answer's Request nil or
// another), a caller's repeated scope still retires no token (a-fix17 F2:
// the rule was read from the answer's Request).
func TestARepeatedWordThroughARebuildingTransportRetiresNoToken(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	inner := g.Client().Transport
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := inner.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		dump, err := httputil.DumpResponse(resp, true)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		return http.ReadResponse(bufio.NewReader(bytes.NewReader(dump)), nil)
	})}
	rec := &recorder{}
	c := g.newClient(t, pep.WithHTTPClient(hc), pep.WithEventHandler(rec.handle), pep.WithRetry(1, time.Millisecond, time.Millisecond))
	c.SetToken(g.token(t, "alice"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte(`"invalid_token"`)) {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"Bad Request","message":"unknown scope","scope":"invalid_token"}`))
		return true
	})
	_, err := c.Check(t.Context(), "orders", "invalid_token")
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the answer repeats the caller's scope: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a caller's scope name retired the client's shared token: events %v", rec.kinds())
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}

// TestAUTF16OrUTF32RefusalRetiresTheToken: a 403 refusing a revoked
// token in UTF-16 without a byte order mark (told by its zero bytes, as
// RFC 4627 section 3 does) or in UTF-32 with one retires it, and its cached
// GRANT is served no more (a-fix17 F3).
func TestAUTF16OrUTF32RefusalRetiresTheToken(t *testing.T) {
	t.Parallel()
	const refusal = `{"error":"invalid_token","message":"the token was revoked"}`
	utf16Of := func(order binary.AppendByteOrder) []byte {
		var b []byte
		for _, u := range utf16.Encode([]rune(refusal)) {
			b = order.AppendUint16(b, u)
		}
		return b
	}
	utf32LE := []byte{0xff, 0xfe, 0, 0}
	for _, r := range refusal {
		utf32LE = binary.LittleEndian.AppendUint32(utf32LE, uint32(r))
	}
	for _, a := range []struct {
		name, ct string
		body     []byte
	}{
		{"UTF-16LE without BOM", "application/json; charset=utf-16le", utf16Of(binary.LittleEndian)},
		{"UTF-16BE without BOM", "application/json; charset=utf-16be", utf16Of(binary.BigEndian)},
		{"UTF-32LE with BOM", "application/json; charset=utf-32", utf32LE},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			c := g.newClient(t, pep.WithRetry(1, time.Millisecond, time.Millisecond))
			c.SetToken(g.token(t, "alice"))
			requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
			require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("Content-Type", a.ct)
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write(a.body)
				return true
			})
			_, err := c.Check(t.Context(), "orders", "write")
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the body names invalid_token: the token is refused; got %v", err)
			d, _ := c.Check(t.Context(), "orders", "read")
			assert.False(t, d.Allowed(), "the refused token's cached GRANT must be gone; got cached=%v allowed=%v", d.Cached, d.Allowed())
		})
	}
}

// TestAScopeRepeatedIntoAChallengeRetiresNoToken: a gateway templating a
// caller's scope unescaped into its 403 insufficient_scope challenge (a
// scope `read", error="invalid_token` becomes an error attribute) retires
// no token: for a request that named the word, the word refuses nothing
// wherever the answer says it (a-fix17 F4).
func TestAScopeRepeatedIntoAChallengeRetiresNoToken(t *testing.T) {
	t.Parallel()
	const scope = `read", error="invalid_token`
	g := startReference(t)
	rec := &recorder{}
	c := g.newClient(t, pep.WithEventHandler(rec.handle), pep.WithRetry(1, time.Millisecond, time.Millisecond))
	c.SetToken(g.token(t, "alice"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte(`invalid_token`)) {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"Forbidden","message":"insufficient scope"}`))
		return true
	})
	_, err := c.Check(t.Context(), "orders", scope)
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the challenge repeats the caller's scope: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a caller's scope name retired the client's shared token: events %v", rec.kinds())
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}

// TestADecodedWordRepeatedRetiresNoToken: a caller's scope that a
// gateway decodes into invalid_token before repeating it (percent-escapes,
// Unicode lower-casing of a Kelvin sign) retires no token (a-fix17 F5).
func TestADecodedWordRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct{ name, scope, marker string }{
		{"percent-encoded underscore", "invalid%5Ftoken", "invalid%5Ftoken"},
		{"percent-encoded letters", "%69nvalid_%74oken", "%69nvalid_%74oken"},
		// a gateway matching scopes case-insensitively lowercases them (strings.ToLower): KELVIN SIGN becomes k
		{"Kelvin sign lowercased", "invalid_to\u212aen", "to\u212aen"},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			assertScopeNotLockingOut(t, a.scope, a.marker, http.StatusBadRequest, "application/json",
				`{"error":"Bad Request","message":"unknown scope","scope":"invalid_token"}`)
		})
	}
}

// TestAForwardedHeaderRepeatedRetiresNoToken: a caller's tracestate,
// forwarded with the request and repeated by a front's 400, retires no
// token: every header value the request carries counts as its words
// (a-fix17 F8).
func TestAForwardedHeaderRepeatedRetiresNoToken(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	rec := &recorder{}
	c := g.newClient(t, pep.WithEventHandler(rec.handle), pep.WithRetry(1, time.Millisecond, time.Millisecond))
	c.SetToken(g.token(t, "alice"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	g.setHook(func(w http.ResponseWriter, r *http.Request, _ int) bool {
		ts := r.Header.Get("Tracestate")
		if ts == "" {
			return false
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("tracestate not accepted: " + ts + "\n"))
		return true
	})
	state, err := trace.ParseTraceState("acme=invalid_token")
	require.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, TraceState: state,
	})
	ctx := trace.ContextWithSpanContext(t.Context(), sc) // the caller's context
	_, err = c.Check(ctx, "orders", "write")
	require.NotEmpty(t, g.last(t).Header.Get("Tracestate"), "the caller's tracestate was forwarded")
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the answer repeats the caller's tracestate: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a caller's tracestate retired the client's shared token: events %v", rec.kinds())
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}

// TestALargeUTF16ProofRefusalRetiresNoToken: a DPoP 401 blaming the
// proof in a UTF-16 body within MaxBody, which re-encoded to UTF-8 is
// longer, is read whole: it retires no valid token (a-fix17 F6: MaxBody
// was judged again on the re-encoded text, which read as unseen).
func TestALargeUTF16ProofRefusalRetiresNoToken(t *testing.T) {
	t.Parallel()
	text := `{"error":"invalid_dpop_proof","message":"` + strings.Repeat("証", 400_000) + `"}`
	body := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(text)) {
		body = binary.LittleEndian.AppendUint16(body, u)
	}
	require.LessOrEqual(t, len(body), 1<<20, "the body as it came is within MaxBody")

	g := startReference(t)
	c, rec, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
	require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

	g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		w.Header().Set("WWW-Authenticate", `DPoP error="invalid_dpop_proof", algs="ES256"`)
		w.Header().Set("Content-Type", "application/json; charset=utf-16")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(body)
		return true
	})
	_, err := c.Check(t.Context(), "orders", "write")
	assert.ErrorIs(t, err, pep.ErrProofRejected, "the 401 blames the proof: %v", err)
	assert.NotErrorIs(t, err, pep.ErrUnauthorized, "the 401 blames the proof, not the token: %v", err)
	assert.False(t, slices.Contains(rec.kinds(), events.TokenExpired),
		"a proof refusal retired the valid DPoP token: events %v", rec.kinds())
	g.setHook(nil)
	d, _ := c.Check(t.Context(), "orders", "read")
	assert.True(t, d.Allowed() && d.Cached, "the valid token's cached GRANT must stay; got cached=%v allowed=%v", d.Cached, d.Allowed())
}
