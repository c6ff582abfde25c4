package mockserver

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzOrganizationHandlers$' -fuzztime 10m -parallel=1 ./mockserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fuzzRoutes are the organization routes that read a body or a query,
// i.e. orgRoutes without the DELETEs, which would only shrink the world the
// fuzzer works on.
func fuzzRoutes() []orgRoute {
	var out []orgRoute
	for _, rt := range orgRoutes {
		if rt.method != http.MethodDelete {
			out = append(out, rt)
		}
	}
	return out
}

// FuzzOrganizationHandlers sends arbitrary bodies and query strings to the
// organization API's handlers: whatever comes in, the answer is never a 5xx
// nor a panic, and always JSON; an error always has the service's shape.
func FuzzOrganizationHandlers(f *testing.F) {
	routes := fuzzRoutes()
	for i, rt := range routes {
		body, _ := json.Marshal(rt.body)
		f.Add(uint8(i), "", body)
		f.Add(uint8(i), "offset=1&count=2", []byte(`{"name": 1, "attributes": {"a": "b"}}`))
	}
	f.Add(uint8(1), "", []byte(`{"name":"x","alias":"y","attributes":{"k":[null,"v"]}}`))
	f.Add(uint8(2), "search=%00", []byte(`null`))
	f.Add(uint8(0), "count=99999999999999999999", []byte(`[]`))

	a := newOrgAPI(f)
	world := orgWorld(a)
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		rt := routes[int(route)%len(routes)]
		target := "/admin/realms/acme/organizations" + fill(rt.path, world)
		req := httptest.NewRequest(rt.method, "http://fuzz.test"+target, bytes.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+a.admin)
		req.Header.Set("Content-Type", "application/json")
		rec := serveFuzz(t, a.s, req)
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: invalid JSON answer %q", rt.method, target, rec.Body)
		}
		if rec.Code >= 400 {
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != http.StatusText(rec.Code) || e.Message == "" {
				t.Fatalf("%s %s: bad error body %q", rt.method, target, rec.Body)
			}
		}
	})
}
