package middleware_test

// Laravel reads _method from a JSON body.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/middleware"
)

// laravelOverriding models Laravel: Illuminate\Http\Request::createFromBase
// sets $request->request = $request->json() when isJson() (the
// Content-Type contains "/json" or "+json"), and the HTTP kernel enables
// Symfony's httpMethodParameterOverride, so Request::getMethod on a POST
// takes $this->request->get('_method'), here a key of the JSON body.
var laravelOverriding = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	performed := r.Method
	ct := r.Header.Get("Content-Type")
	if r.Method == http.MethodPost && (strings.Contains(ct, "/json") || strings.Contains(ct, "+json")) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			_, _ = io.WriteString(w, "read refused")
			return
		}
		var in map[string]any
		if json.Unmarshal(body, &in) == nil {
			if m, ok := in["_method"].(string); ok {
				if u := strings.ToUpper(m); u == "DELETE" || u == "PUT" || u == "PATCH" {
					performed = u
				}
			}
		}
	}
	_, _ = io.WriteString(w, "performed "+performed)
})

// TestJSONBodyMethodOverrideIsRefused: a JSON body's _method, which
// Laravel takes the method from, never makes the Laravel stack behind
// perform DELETE where a POST was checked (dan may not DELETE), trusted or
// not: the read fails.
func TestJSONBodyMethodOverrideIsRefused(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	trusting := guard.With(middleware.WithMethodOverride("_method"))
	for _, ct := range []string{"application/json", "application/vnd.api+json", "application/json; charset=utf-8"} {
		for guardName, g := range map[string]middleware.Middleware{"": guard, "trusted, ": trusting} {
			t.Run(guardName+ct, func(t *testing.T) {
				t.Parallel()
				rec := formRequest{target: "/orders/42", contentType: ct, body: `{"_method":"DELETE"}`}.serve(t, g(laravelOverriding), dan)
				assert.NotEqual(t, "performed DELETE", rec.Body.String(),
					"checked as POST (dan may not DELETE), performed as DELETE by the Laravel stack behind")
			})
		}
	}
}
