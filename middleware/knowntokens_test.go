package middleware_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
)

// TestGrantedTokenVouchesForNoOther: the guards skip the grammar check
// for a token they granted before, and only for that token. A token
// that differs from a granted one in one byte of its first half (the
// same length, the same claims' middle and the same signature's end,
// which is what a cheap fingerprint of a JWT would read) and is no
// b64token there is refused with 401 without a call, after the granted
// one was let through; the granted one still is.
func TestGrantedTokenVouchesForNoOther(t *testing.T) {
	t.Parallel()
	granted := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLW9mLWFubg" // unique to this test
	forgeries := map[string]string{
		"a comma":      granted[:5] + "," + granted[6:],
		"a space":      granted[:5] + " " + granted[6:],
		"a padding":    granted[:5] + "=" + granted[6:],
		"a quote":      granted[:5] + `"` + granted[6:],
		"a non-ASCII":  granted[:4] + "é" + granted[6:],
		"a NUL":        granted[:5] + "\x00" + granted[6:],
		"a last byte":  granted[:len(granted)-1] + "!",
		"a first byte": "!" + granted[1:],
	}
	for name, forged := range forgeries {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Len(t, forged, len(granted))
			fc := &fakeChecker{grant: true}
			h := middleware.Require(fc, "orders", "read")(reached)
			got := serve(t, h, http.MethodGet, "Bearer "+granted)
			require.Equal(t, http.StatusOK, got.status, got.body)

			got = serve(t, h, http.MethodGet, "Bearer "+forged)
			assert.Equal(t, http.StatusUnauthorized, got.status, got.body)
			assert.Equal(t, "Bearer", got.challenge, "no decision was made")
			assert.Equal(t, int32(1), fc.calls.Load(), "the forged token was not sent")

			got = serve(t, h, http.MethodGet, "Bearer "+granted)
			assert.Equal(t, http.StatusOK, got.status, got.body)
		})
	}
}

// TestCallerTokenReadAsBearerToken: the guards read the caller's token
// as BearerToken does whether or not they granted it before: the scheme in
// any case, the spaces after it, and the same refusals.
func TestCallerTokenReadAsBearerToken(t *testing.T) {
	t.Parallel()
	tok := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.dGhlLXNpZ25hdHVyZS1vZi1ib2I"
	for _, auth := range []string{
		"Bearer " + tok, "bearer " + tok, "BEARER " + tok, "bEaReR    " + tok,
		"Bearer  " + tok + "==",
	} {
		t.Run(auth[:10], func(t *testing.T) {
			t.Parallel()
			want := testkit.Must(bearerOf(auth))(t)
			fc := &fakeChecker{grant: true}
			var got []string
			h := middleware.Require(fc, "orders", "read")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tok := testkit.Must(middleware.BearerToken(r))(t)
				got = append(got, tok)
			}))
			for range 2 { // the second time, the token is one the guard granted
				a := serve(t, h, http.MethodGet, auth)
				require.Equal(t, http.StatusOK, a.status, a.body)
			}
			assert.Equal(t, []string{want, want}, got)
		})
	}
	for _, auth := range []string{"Bearer" + tok, "Bearer\t" + tok, "Bearerx " + tok, "Basic " + tok, "Bearer ", "Bearer " + tok + "=x", "Bearer " + strings.Repeat("=", 20)} {
		t.Run("refused "+auth[:min(len(auth), 10)], func(t *testing.T) {
			t.Parallel()
			_, err := bearerOf(auth)
			require.ErrorIs(t, err, middleware.ErrMalformedBearer)
			fc := &fakeChecker{grant: true}
			a := serve(t, middleware.Require(fc, "orders", "read")(reached), http.MethodGet, auth)
			assert.Equal(t, http.StatusUnauthorized, a.status)
			assert.Zero(t, fc.calls.Load())
		})
	}
}

func bearerOf(auth string) (string, error) {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", auth)
	return middleware.BearerToken(r)
}
