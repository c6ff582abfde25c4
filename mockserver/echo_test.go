package mockserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoAnswerRepeatsACredential (a-server13 F1) walks every route of the
// server and sends a real access token (another user's) in the wrong
// place: in each path value in turn, in each string of the route's request
// body (from the OpenAPI document's schema) in turn and in all at once, as
// a query parameter's name (a well-formed query and one the server
// refuses), as the JSON and as the HTML caller. No error -- an answer's
// body other than a success's, a success's "error" members (AuthZEN), a
// header -- may hold the token's signature: pep puts the server's message
// into its error string, which applications log, and its redaction removes
// only the credential the request itself carried. The error routes used to
// copy the token whole: `unknown client "<token>"`, `not found:
// organization "<token>"`, `no route for GET .../<token>`, a details[].field
// that was the token, AuthZEN's context.error.message.
func TestNoAnswerRepeatsACredential(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	secret := a.token("acme", "bob")
	sig := secret[strings.LastIndexByte(secret, '.')+1:]
	pep := a.token("acme", "service-account-orders-api") // an AuthZEN PEP
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openAPIDocument, &doc))
	paths, _ := doc["paths"].(map[string]any)
	good := map[string]string{"{realm}": "acme", "{orgId}": org, "{alias}": "acme", "{client}": "orders-api",
		"{clientId}": "orders-api", "{userId}": a.userID("acme", "bob")}
	type request struct{ path, query, contentType, body string }
	sent := 0
	for _, p := range a.s.patterns {
		method, tmpl, _ := strings.Cut(p, " ")
		tmpl = strings.Replace(tmpl, "{$}", "", 1)
		segs := fillTemplate(tmpl, good)
		tmplSegs := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
		path := "/" + strings.Join(segs, "/")
		var reqs []request
		// Each path value in turn.
		for i, s := range tmplSegs {
			if strings.HasPrefix(s, "{") {
				bad := append([]string(nil), segs...)
				bad[i] = secret
				reqs = append(reqs, request{path: "/" + strings.Join(bad, "/")})
			}
		}
		// The path with one more segment, and a query parameter named by
		// the token, well-formed and refused.
		reqs = append(reqs, request{path: strings.TrimSuffix(path, "/") + "/" + secret},
			request{path: path, query: secret + "=1"}, request{path: path, query: "offset=0&" + secret + "=1;"})
		// Each string of the body in turn, and all at once.
		op, _ := opOf(paths, tmpl, method)
		if ct, schema, ok := bodySchema(doc, op); ok {
			n := countStrings(doc, schema)
			for hot := -1; hot < n; hot++ {
				k := 0
				v := exampleOf(doc, schema, secret, hot, &k, 0)
				reqs = append(reqs, request{path: path, contentType: ct, body: encodeBody(ct, v)})
			}
		}
		for _, rq := range reqs {
			for _, as := range []string{a.admin, pep} {
				for _, accept := range []string{"application/json", "text/html"} {
					u := a.url + rq.path
					if rq.query != "" {
						u += "?" + rq.query
					}
					h := http.Header{"Authorization": {"Bearer " + as}, "Accept": {accept}}
					if rq.contentType != "" {
						h["Content-Type"] = []string{rq.contentType}
					}
					r := a.sendHeader(t, method, u, rq.body, h)
					sent++
					headers, _ := json.Marshal(r.Header)
					said := string(r.Body)
					if r.Status < 300 { // what a success stores and returns (a description) is not an error: its errors are
						said = errorsIn(r.Body)
					}
					assert.NotContains(t, said, sig, "%s %s (%s) as %.10s, Accept %s: the answer (%d) repeats the token sent in the wrong place",
						method, redactedURL(u, secret), rq.contentType, as, accept, r.Status)
					assert.NotContains(t, string(headers), sig, "%s %s: a header repeats the token", method, redactedURL(u, secret))
				}
			}
		}
	}
	t.Logf("%d requests", sent)
}

// errorsIn returns the members named "error" of the JSON body, anywhere in
// it (AuthZEN's context.error, of each evaluation too), encoded.
func errorsIn(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return string(body)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for name, x := range v {
				if name == "error" {
					e, _ := json.Marshal(x)
					b.Write(e)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}

// redactedURL is u with the token replaced, for a failure's message.
func redactedURL(u, secret string) string { return strings.ReplaceAll(u, secret, "<token>") }

// opOf returns the operation of method on the OpenAPI path tmpl.
func opOf(paths map[string]any, tmpl, method string) (map[string]any, bool) {
	item, _ := paths[tmpl].(map[string]any)
	op, ok := item[strings.ToLower(method)].(map[string]any)
	return op, ok
}

// bodySchema returns the media type and schema of op's request body.
func bodySchema(doc, op map[string]any) (string, map[string]any, bool) {
	rb, _ := resolveRef(doc, op["requestBody"])
	content, _ := rb["content"].(map[string]any)
	cts := make([]string, 0, len(content))
	for ct := range content {
		cts = append(cts, ct)
	}
	sort.Strings(cts)
	for _, ct := range cts {
		m, _ := content[ct].(map[string]any)
		if s, ok := resolveRef(doc, m["schema"]); ok {
			return ct, s, true
		}
	}
	return "", nil, false
}

// resolveRef returns v as an object, following a "$ref" into doc.
func resolveRef(doc map[string]any, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	for depth := 0; ok && depth < 8; depth++ {
		ref, isRef := m["$ref"].(string)
		if !isRef {
			return m, true
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			obj, _ := cur.(map[string]any)
			cur = obj[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
		}
		m, ok = cur.(map[string]any)
	}
	return m, ok
}

// countStrings is the number of strings exampleOf puts in schema's value.
func countStrings(doc, schema map[string]any) int {
	k := 0
	exampleOf(doc, schema, "", -2, &k, 0)
	return k
}

// exampleOf returns a value of schema in which the hot-th string (counted
// in *k) is secret, every string when hot is -1, and the others a value of
// the schema (its first enum value, else "x").
func exampleOf(doc, schema map[string]any, secret string, hot int, k *int, depth int) any {
	s, ok := resolveRef(doc, schema)
	if !ok || depth > 6 {
		return nil
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			if key != "allOf" {
				first, _ := alts[0].(map[string]any)
				return exampleOf(doc, first, secret, hot, k, depth+1)
			}
			merged := map[string]any{}
			for _, alt := range alts {
				altS, _ := alt.(map[string]any)
				if v, ok := exampleOf(doc, altS, secret, hot, k, depth+1).(map[string]any); ok {
					for name, x := range v {
						merged[name] = x
					}
				}
			}
			return merged
		}
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch {
	case typ == "object" || s["properties"] != nil:
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		out := map[string]any{}
		for _, name := range names {
			ps, _ := props[name].(map[string]any)
			out[name] = exampleOf(doc, ps, secret, hot, k, depth+1)
		}
		return out
	case typ == "array":
		items, _ := s["items"].(map[string]any)
		return []any{exampleOf(doc, items, secret, hot, k, depth+1)}
	case typ == "integer" || typ == "number":
		return 1
	case typ == "boolean":
		return true
	case typ == "string":
		i := *k
		*k++
		if hot == -1 || hot == i {
			return secret
		}
		if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
			return enum[0]
		}
		return "x"
	}
	return nil
}

// encodeBody encodes v as a body of media type ct.
func encodeBody(ct string, v any) string {
	if ct == "application/x-www-form-urlencoded" {
		form := url.Values{}
		m, _ := v.(map[string]any)
		for name, x := range m {
			if s, ok := x.(string); ok {
				form.Set(name, s)
			}
		}
		return form.Encode()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestErrorsNameOnlyWhatTheServerPublishes: an error repeats a caller's
// value only when the server knows it as public to that caller (a live
// realm's name, the id of an object the caller's realm holds) or as a word
// of the API; an unknown value, however well-shaped, is described by its
// length where it was (a-fix13c F1: every secret the server makes has an
// identifier's shape).
func TestErrorsNameOnlyWhatTheServerPublishes(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	held := a.createOrg("Acme", "acme-eu")
	deleted := a.createOrg("Gone", "gone-eu")
	require.Equal(t, http.StatusOK, a.doAs(a.admin, http.MethodDelete, "/"+deleted, nil).Status)
	decide := a.url + "/realms/acme/authorization-decision-provider"
	missing := "3f1e0c55-2b9a-4c0e-9d7e-6a8f2c1b0d4e"
	long := strings.Repeat("a", 64) // one byte longer than any identifier
	// A former tenant: its realm answers nothing now, so its name is no
	// more public than one never used (a-server14 F3,
	// TestAttackDecommissionedTenantNameIsNoOracle).
	platform := a.token("master", "service-account-platform-admin")
	res := a.doAs(platform, http.MethodPost, a.url+"/admin/tenants", map[string]any{"name": "initech", "plan": "free", "adminEmail": "root@initech.test"})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	var tenant struct {
		Result struct {
			TenantID string `json:"tenantId"`
		} `json:"result"`
	}
	res.into(t, &tenant)
	res = a.doAs(platform, http.MethodDelete, a.url+"/admin/tenants/"+tenant.Result.TenantID, nil)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	// A live tenant's id, held by its realm, not by acme's.
	res = a.doAs(platform, http.MethodPost, a.url+"/admin/tenants", map[string]any{"name": "hooli", "plan": "free", "adminEmail": "root@hooli.test"})
	require.Equal(t, http.StatusCreated, res.Status, string(res.Body))
	res.into(t, &tenant)
	theirs := tenant.Result.TenantID
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		message                  string
		field                    string
	}{
		{"unknown client", http.MethodPost, decide + "/authorize", `{"clientId":"no-such-client","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 14 bytes, not repeated)`, "clientId"},
		// A name within a realm is public to its callers only, which an
		// error's writer cannot tell: described, here and in another realm
		// (looking them up in every realm was an oracle of one tenant's
		// names for another's callers).
		{"a user's name given as a client", http.MethodPost, decide + "/authorize", `{"clientId":"carol","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 5 bytes, not repeated)`, "clientId"},
		{"another realm's user given as a client", http.MethodPost, decide + "/authorize", `{"clientId":"gina","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 4 bytes, not repeated)`, "clientId"},
		{"a realm's name", http.MethodPost, decide + "/authorize", `{"clientId":"globex","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client "globex"`, "clientId"},
		{"a decommissioned realm's name", http.MethodPost, decide + "/authorize", `{"clientId":"initech","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 7 bytes, not repeated)`, "clientId"},
		{"a decommissioned realm's discovery", http.MethodGet, a.url + "/realms/initech/.well-known/openid-configuration", "",
			http.StatusNotFound, `not found: realm (a value of 7 bytes, not repeated)`, ""},
		{"a decommissioned realm's metadata", http.MethodGet, a.url + "/.well-known/oauth-authorization-server/realms/initech", "",
			http.StatusNotFound, `not found: realm (a value of 7 bytes, not repeated)`, ""},
		{"a decommissioned realm's keys", http.MethodGet, a.url + "/realms/initech/protocol/openid-connect/certs", "",
			http.StatusNotFound, `not found: realm (a value of 7 bytes, not repeated)`, ""},
		{"a client that is no identifier", http.MethodPost, decide + "/authorize", `{"clientId":"Bearer abc","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 10 bytes, not repeated)`, "clientId"},
		{"a client longer than an identifier", http.MethodPost, decide + "/authorize", `{"clientId":"` + long + `","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 64 bytes, not repeated)`, "clientId"},
		// An id is repeated because the caller's realm holds its object, not for
		// its form (a-fix14 F2): a UUID the server never assigned may be a
		// secret (uuidgen's admin secret, a Keycloak-exported client
		// secret).
		// An id is known to the callers of the realm that holds it: one
		// another tenant holds is described to acme's caller, as an id no
		// realm holds is (a-fix14d: a lookup in every realm told any
		// caller whether some tenant holds an id).
		{"an id another realm holds, given as a client", http.MethodPost, decide + "/authorize", `{"clientId":"` + theirs + `","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client (a value of 36 bytes, not repeated)`, "clientId"},
		{"an id another realm holds, as an organization", http.MethodGet, "/" + theirs, "",
			http.StatusNotFound, `not found: organization (a value of 36 bytes, not repeated)`, ""},
		{"unknown organization id", http.MethodGet, "/" + missing, "",
			http.StatusNotFound, `not found: organization (a value of 36 bytes, not repeated)`, ""},
		{"an id the store holds, given as a client", http.MethodPost, decide + "/authorize", `{"clientId":"` + held + `","resources":[{"name":"orders"}],"context":{}}`,
			http.StatusBadRequest, `clientId: unknown client "` + held + `"`, "clientId"},
		{"a deleted organization's id", http.MethodGet, "/" + deleted, "",
			http.StatusNotFound, `not found: organization (a value of 36 bytes, not repeated)`, ""},
		{"unknown alias", http.MethodGet, "/alias/no-such-org", "",
			http.StatusNotFound, `not found: organization with alias (a value of 11 bytes, not repeated)`, ""},
		{"unrouted path", http.MethodGet, a.url + "/admin/realms/acme/nope", "",
			http.StatusNotFound, `no route for GET "/admin/realms/acme/(a value of 4 bytes, not repeated)"`, ""},
		{"unrouted path of the API's words and a realm's names", http.MethodGet, a.url + "/admin/realms/acme/organizations/alias/acme-eu/orders-api", "",
			http.StatusNotFound, `no route for GET "/admin/realms/acme/organizations/alias/(a value of 7 bytes, not repeated)/(a value of 10 bytes, not repeated)"`, ""},
		{"unrouted path with a long segment", http.MethodGet, a.url + "/admin/realms/acme/users/" + long, "",
			http.StatusNotFound, `no route for GET "/admin/realms/acme/users/(a value of 64 bytes, not repeated)"`, ""},
		{"a query parameter's name that is no name of the API", http.MethodGet, "?offset=0&a+b=1;", "",
			http.StatusBadRequest, "(a name of 3 bytes, not repeated): a semicolon does not separate query parameters; use & between them, and %3B for a semicolon in a value",
			"(a name of 3 bytes, not repeated)"},
		{"a query parameter's name of the API", http.MethodGet, "?offset=0&count=1;", "",
			http.StatusBadRequest, "count: a semicolon does not separate query parameters; use & between them, and %3B for a semicolon in a value",
			"count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			e := a.doAs(a.admin, tc.method, tc.path, body).errBody(t, tc.status)
			assert.Equal(t, tc.message, e.Message)
			if tc.field != "" {
				require.Len(t, e.Details, 1)
				assert.Equal(t, tc.field, e.Details[0].Field)
			}
		})
	}
}

// TestSayable: what sayable keeps of a message and what it describes: a
// value the server publishes (known), an id, the wildcard, a word of the
// API, a bad escape; not an unknown value, however well-shaped.
func TestSayable(t *testing.T) {
	t.Parallel()
	tok := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbi10aGF0LWlzLWxvbmc"
	secret := "j_efXXrzpM2zQE9lDAUSq6Th6SZu9PpY" // a client secret's shape: randomSecret(24)
	known := func(v string) bool {
		return v == "orders-api" || v == "bob@example.com" || v == "acme" || v == "0c9d6a8e-3b1f-4d2a-9e5c-7f8a1b2c3d4e"
	}
	for _, tc := range []struct{ in, want string }{
		{"the resources array cannot be empty", "the resources array cannot be empty"},
		{`unknown client "orders-api"`, `unknown client "orders-api"`},
		{`not found: user "bob@example.com"`, `not found: user "bob@example.com"`},
		{`not found: user "carol@example.com"`, `not found: user (a value of 17 bytes, not repeated)`},
		{`unknown client "no-such-client"`, `unknown client (a value of 14 bytes, not repeated)`},
		{`unknown client "` + secret + `"`, `unknown client (a value of 32 bytes, not repeated)`},
		// A UUID is an id the server knows or a caller's value (a-fix14
		// F2): known decides, not the form.
		{`not found: organization "3f1e0c55-2b9a-4c0e-9d7e-6a8f2c1b0d4e"`, `not found: organization (a value of 36 bytes, not repeated)`},
		{`not found: organization "0c9d6a8e-3b1f-4d2a-9e5c-7f8a1b2c3d4e"`, `not found: organization "0c9d6a8e-3b1f-4d2a-9e5c-7f8a1b2c3d4e"`},
		{`no resource type "*"`, `no resource type "*"`},
		{`the member "clientId" is required`, `the member "clientId" is required`},
		{`invalid URL escape "%zz"`, `invalid URL escape "%zz"`},
		{`unknown client "` + tok + `"`, "unknown client (a value of 87 bytes, not repeated)"},
		{`unknown client "Bearer abc"`, "unknown client (a value of 10 bytes, not repeated)"},
		{`unknown client "-x"`, "unknown client (a value of 2 bytes, not repeated)"},
		{`a "quoted \"inner\" value" and "orders-api"`, `a (a value of 20 bytes, not repeated) and "orders-api"`},
		{`no route for GET "/admin/realms/acme/nope"`, `no route for GET "/admin/realms/acme/(a value of 4 bytes, not repeated)"`},
		{`no route for GET "/admin/` + tok + `/x"`, `no route for GET "/admin/(a value of 87 bytes, not repeated)/(a value of 1 byte, not repeated)"`},
		{`a " quoted "` + tok, `a (a value of 8 bytes, not repeated)(a value of 87 bytes, not repeated)`},
		{`a lone "` + tok, `a lone "(a value of 87 bytes, not repeated)`},
		{"bare " + tok + " text", "bare (a value of 87 bytes, not repeated) text"},
		{"bare /path/" + tok, "bare /path/(a value of 87 bytes, not repeated)"},
	} {
		assert.Equal(t, tc.want, sayable(tc.in, known), "%s", redactedURL(tc.in, tok))
	}
	// Without a knower only ids, the wildcard and the API's words are named.
	assert.Equal(t, `unknown client (a value of 10 bytes, not repeated)`, sayable(`unknown client "orders-api"`, nil))
	for _, tc := range []struct{ in, want string }{
		{"clientId", "clientId"},
		{"resources[0].scopes[1]", "resources[0].scopes[1]"},
		{"resources[]", "resources[]"},
		{"resources[].ſcopes", "resources[].(a name of 7 bytes, not repeated)"},
		{"resources[x]", "(a name of 12 bytes, not repeated)"},
		{tok, "(a name of 20 bytes, not repeated).(a name of 18 bytes, not repeated).(a name of 47 bytes, not repeated)"},
		{secret, "(a name of 32 bytes, not repeated)"},
		{"clientId.Zm9vYmFy", "clientId.(a name of 8 bytes, not repeated)"},
		{"context.methıd", "context.(a name of 7 bytes, not repeated)"},
		{"a+b", "(a name of 3 bytes, not repeated)"},
		{"Host", "Host"},
	} {
		assert.Equal(t, tc.want, sayableField(tc.in, known))
	}
}

// TestAnErrorAsksTheStoreABoundedNumberOfTimes: the router's 404 quotes
// the path, and each segment that is no word of the API is a walk of the
// store; a path of thousands of segments, sent without a token, cost one
// walk each. An error asks about 16 values at most and describes the rest.
func TestAnErrorAsksTheStoreABoundedNumberOfTimes(t *testing.T) {
	t.Parallel()
	asked := 0
	known := func(v string) bool { asked++; return v == "carol" }
	path := "/x" + strings.Repeat("/carol", 1000)
	said := sayable(`no route for GET "`+path+`"`, known)
	assert.Equal(t, 16, asked)
	assert.Equal(t, 15, strings.Count(said, "/carol"), "the first lookups still name what they find (/x is the first)")
	assert.Equal(t, 985, strings.Count(said, "(a value of 5 bytes, not repeated)"))

	asked = 0
	e := sayableError(&apiError{status: 400, message: `clientId: ` + strings.Repeat(`"carol" `, 40),
		details: []fieldError{{Field: "clientId", Message: strings.Repeat(`"carol" `, 40)}}}, known)
	assert.Equal(t, 16, asked, "one budget for the message and its details")
	assert.Equal(t, 16, strings.Count(e.message+e.details[0].Message, `"carol"`))
}
