package middleware_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
)

// TestOverrideHeaderSpeltWithUnderscoresIsRefused: CGI (so PHP, and Rack
// behind a CGI-style server) reads X_HTTP_METHOD_OVERRIDE as
// X-HTTP-Method-Override, which net/http keeps apart: such a header is
// refused with 400 before the decision, trusted or not; so is one spelt
// with '.', which PHP reads as '_' (Caddy's php_fastcgi and FrankenPHP
// pass it on).
func TestOverrideHeaderSpeltWithUnderscoresIsRefused(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	trusting := guard.With(middleware.WithMethodOverride("X-HTTP-Method-Override"))
	for _, name := range []string{"X_HTTP_METHOD_OVERRIDE", "x-http_method-override", "X_HTTP_METHOD", "X_Method_Override",
		"X.Http.Method.Override", "X-Http.Method-Override"} {
		for guardName, g := range map[string]middleware.Middleware{"": guard, "trusted, ": trusting} {
			t.Run(guardName+name, func(t *testing.T) {
				t.Parallel()
				rec := formRequest{target: "/orders/42", headers: map[string]string{name: "DELETE"}}.serve(t, g(echoMethod), dan)
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				name, _ := errorBody(t, rec.Body.String())
				assert.Equal(t, "Bad Request", name)
			})
		}
	}
}

// echoMethod answers with the method it was given.
var echoMethod = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "performed "+r.Method)
})
