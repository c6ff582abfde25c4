package middleware

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/pep"
)

// checker answers every request with res and err.
type checker struct {
	res pep.Result
	err error
}

func (c checker) CheckMany(context.Context, []pep.Resource, ...pep.CallOption) (pep.Result, error) {
	return c.res, c.err
}

// TestOnlyGrantedTokensAreKept: a token is kept only once a request that
// carried it was granted, never for a denial, a 401, an outage or a
// request refused before the call.
func TestOnlyGrantedTokensAreKept(t *testing.T) {
	t.Parallel()
	deny := pep.Result{Status: pep.Deny, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Deny}}}
	grant := pep.Result{Status: pep.Grant, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Grant}}}
	unavailable := pep.Result{Status: pep.Deny, Decisions: []pep.Decision{{Resource: "orders", Scope: "read", Status: pep.Deny, Cause: pep.ErrUnavailable}}}
	tests := []struct {
		name   string
		c      checker
		target string
		kept   bool
	}{
		{"denied", checker{res: deny}, "/orders/42", false},
		{"unauthorized", checker{res: deny, err: pep.ErrUnauthorized}, "/orders/42", false},
		{"no decision", checker{res: unavailable}, "/orders/42", false},
		{"refused before the call", checker{res: grant}, "/orders/../42", false},
		{"granted", checker{res: grant}, "/orders/42", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := strings.Repeat("k", 40) + "." + strings.Repeat(string(rune('a'+i)), 40) // one per test
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, tt.target, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			Require(tt.c, "orders", "read")(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), req)
			assert.Equal(t, tt.kept, known(tok))
		})
	}
}

// TestShortTokensAreNotKept: a token shorter than minKnownToken, which
// is checked as fast as it is hashed, is never kept.
func TestShortTokensAreNotKept(t *testing.T) {
	t.Parallel()
	tok := strings.Repeat("s", minKnownToken-1)
	remember(tok)
	assert.False(t, known(tok))
}

// FuzzCutBearer holds cutBearer to what BearerFromValues read before it:
// strings.Cut at the first space, strings.EqualFold with "Bearer", then
// the spaces trimmed.
func FuzzCutBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  abc", "BEARER", "Bearer", "Bearer ", "Bearerx abc", "Basic abc",
		"Bear\u212Ar abc", "\u212Aearer abc", "Bearer\tabc", " Bearer abc", "beaRer x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		scheme, rest, ok := strings.Cut(v, " ")
		ok = ok && strings.EqualFold(scheme, "Bearer")
		want := ""
		if ok {
			want = strings.TrimLeft(rest, " ")
		}
		got, gotOK := cutBearer(v)
		if got != want || gotOK != ok {
			t.Fatalf("cutBearer(%q) = %q, %v; want %q, %v", v, got, gotOK, want, ok)
		}
	})
}
