package pep_test

import (
	"encoding/binary"
	"net/http"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// assertNotLockedOut runs one caller's check of scope "invalid_token"
// against a gateway repeating it with status, contentType and body
// (assertScopeNotLockingOut).
func assertNotLockedOut(t *testing.T, status int, contentType, body string) {
	t.Helper()
	assertScopeNotLockingOut(t, "invalid_token", `"invalid_token"`, status, contentType, body)
}

// TestACallersWordRepeatedAsAValueRetiresNoToken: a 400/403 whose JSON
// body repeats the caller's scope invalid_token as a value of its own
// retires no token: the request named the word, so the body may be its
// words repeated (a-read17 F1: any string at any depth of a JSON body read
// whole refused the token, and any caller retired the client's own token
// for every caller).
func TestACallersWordRepeatedAsAValueRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name   string
		status int
		body   string
	}{
		{"400 scope member", http.StatusBadRequest, `{"error":"Bad Request","message":"unknown scope","scope":"invalid_token"}`},
		{"400 details value", http.StatusBadRequest, `{"error":"Bad Request","message":"validation failed","details":[{"field":"scope","value":"invalid_token"}]}`},
		{"403 denied scopes list", http.StatusForbidden, `{"error":"Forbidden","message":"scope not granted","deniedScopes":["invalid_token"]}`},
		{"400 details keyed by value", http.StatusBadRequest, `{"error":"Bad Request","unknownScopes":{"invalid_token":"not defined"}}`},
		// Spring's default validation body (a-read17b F2)
		{"400 errors[].rejectedValue", http.StatusBadRequest, `{"error":"Bad Request","message":"Validation failed","errors":[{"field":"scope","rejectedValue":"invalid_token","defaultMessage":"unknown scope"}]}`},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			assertNotLockedOut(t, a.status, "application/json", a.body)
		})
	}
}

// TestACallersWordRepeatedOutsideJSONRetiresNoToken: a caller's scope
// name repeated in a body that is no JSON object read whole (an array,
// plain text, an object a raw tab broke) retires no token either (a-read17
// F2: such a body is searched for the word anywhere, and the request had
// put it there).
func TestACallersWordRepeatedOutsideJSONRetiresNoToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name, ct, body string
	}{
		{"400 JSON array of errors", "application/json", `[{"error":"Bad Request","message":"unknown scope 'invalid_token'"}]`},
		{"400 plain text", "text/plain; charset=utf-8", "unknown scope: invalid_token\n"},
		// net/http's http.Error with fmt.Sprintf("unknown scope %q", scope) (a-read17b F2)
		{"400 http.Error", "text/plain; charset=utf-8", "unknown scope \"invalid_token\" for resource \"orders\"\n"},
		// a gateway that templates its message: the caller's scope "invalid_token\t" leaves a raw tab,
		// the object is not read whole, and the mention is searched raw
		{"400 templated object with the caller's raw tab", "application/json", "{\"error\":\"Bad Request\",\"message\":\"unknown scope invalid_token\t\"}"},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			assertNotLockedOut(t, http.StatusBadRequest, a.ct, a.body)
		})
	}
}

// TestAUTF16RefusalRetiresTheToken: a 403 refusing a revoked token in a
// JSON body written in UTF-16 (with its byte order mark, which RFC 8259
// section 8.1 lets a parser accept) retires it, and its cached GRANT is
// served no more (a-read17 F3: the body was searched as UTF-8 bytes only).
func TestAUTF16RefusalRetiresTheToken(t *testing.T) {
	t.Parallel()
	for _, a := range []struct {
		name  string
		order binary.AppendByteOrder
		bom   []byte
	}{
		{"UTF-16LE", binary.LittleEndian, []byte{0xff, 0xfe}},
		{"UTF-16BE", binary.BigEndian, []byte{0xfe, 0xff}},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			body := append([]byte(nil), a.bom...)
			for _, u := range utf16.Encode([]rune(`{"error":"invalid_token","message":"the token was revoked"}`)) {
				body = a.order.AppendUint16(body, u)
			}
			g := startReference(t)
			c, _, _ := g.dpopClient(t, "alice", nil, pep.WithRetry(1, time.Millisecond, time.Millisecond))
			requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant)
			require.True(t, checked(t, c, "orders", "read").Cached, "the GRANT is cached")

			g.setHook(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
				w.Header().Set("Content-Type", "application/json; charset=utf-16")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write(body)
				return true
			})
			_, err := c.Check(t.Context(), "orders", "write")
			assert.ErrorIs(t, err, pep.ErrUnauthorized, "the body names invalid_token: the token is refused; got %v", err)
			d, _ := c.Check(t.Context(), "orders", "read")
			assert.False(t, d.Allowed(), "the refused token's cached GRANT must be gone; got cached=%v allowed=%v", d.Cached, d.Allowed())
		})
	}
}
