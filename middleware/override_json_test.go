package middleware_test

// Laravel reads _method from a JSON body.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
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
