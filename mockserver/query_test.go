package mockserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/openapitest"
)

// TestEveryRouteRefusesAMalformedQuery sends every route a query that
// url.ParseQuery refuses, with the route's own method, and requires a 400
// naming the parameter at fault, in the shape the route answers errors
// in, as the OpenAPI document says. A pair that did not decode used to be
// dropped: "count=%zz" answered the default page, "search=%zz" the
// unfiltered list.
func TestEveryRouteRefusesAMalformedQuery(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	org := a.createOrg("Acme", "acme")
	chk, err := openapitest.New(openAPIDocument)
	require.NoError(t, err)
	h := chk.Middleware(a.s)
	values := map[string]string{"{realm}": "acme", "{orgId}": org, "{alias}": "acme"}
	// oauth is how an OAuth endpoint's description names the parameter:
	// quoted (oauthErrorf), kept as a word of the API or described, as
	// sayable does (a-fix14 F1).
	queries := []struct{ query, name, oauth string }{
		{"count=%zz", "count", "'count'"},
		{"offset=0&search=a%zz", "search", "'search'"},
		{"%zz=1", "(a name of 3 bytes, not repeated)", "'%zz'"}, // no name of the API's (sayableField)
		{"offset=0;count=2", "offset", "'offset'"},
		{"correct_horse_battery_staple=%zz", "(a name of 28 bytes, not repeated)", "(a value of 28 bytes, not repeated)"}, // a-fix14 F1: a passphrase
	}
	for _, p := range a.s.patterns {
		method, tmpl, _ := strings.Cut(p, " ")
		if method == http.MethodOptions {
			// A preflight is answered whatever the query: the request it
			// asks about gets the 400, which the browser then lets the
			// page read.
			continue
		}
		tmpl = strings.Replace(tmpl, "{$}", "", 1)
		path := "/" + strings.Join(fillTemplate(tmpl, values), "/")
		for _, q := range queries {
			t.Run(p+"?"+q.query, func(t *testing.T) {
				req := httptest.NewRequest(method, "http://x.test"+path+"?"+q.query, strings.NewReader(`{}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+a.admin)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				if strings.Contains(tmpl, "/protocol/openid-connect/") {
					var body struct{ Error, ErrorDescription string }
					require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &struct {
						Error            *string `json:"error"`
						ErrorDescription *string `json:"error_description"`
					}{&body.Error, &body.ErrorDescription}))
					require.Equal(t, "invalid_request", body.Error)
					require.True(t, strings.HasPrefix(body.ErrorDescription, "query parameter "+q.oauth+": "), body.ErrorDescription)
					return
				}
				var body errorBody
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
				require.Equal(t, "Bad Request", body.Error)
				require.Len(t, body.Details, 1)
				require.Equal(t, q.name, body.Details[0].Field)
			})
		}
	}
	require.NoError(t, chk.Err())
}

// fillTemplate returns the segments of the path template tmpl with each
// wildcard given its value in values, or "x".
func fillTemplate(tmpl string, values map[string]string) []string {
	segs := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
	for i, s := range segs {
		if v, ok := values[s]; ok {
			segs[i] = v
		} else if strings.HasPrefix(s, "{") {
			segs[i] = "x"
		}
	}
	return segs
}

// TestMalformedQueryNamesTheParameter: what the 400 says of each way a
// query fails to decode.
func TestMalformedQueryNamesTheParameter(t *testing.T) {
	t.Parallel()
	a := newOrgAPI(t)
	for _, tc := range []struct {
		query, field, message string
	}{
		{"count=%zz", "count", `the value is not properly percent-encoded: invalid URL escape "%zz"`},
		{"count=5&search=%e", "search", `the value is not properly percent-encoded: invalid URL escape "%e"`},
		{"s%zzrch=x", "(a name of 7 bytes, not repeated)", `the name is not properly percent-encoded: invalid URL escape "%zz"`},
		{"count=5;offset=2", "count", "a semicolon does not separate query parameters; use & between them, and %3B for a semicolon in a value"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			r := a.sendRaw(a.admin, http.MethodGet, a.base+"?"+tc.query, "", "")
			require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
			var body errorBody
			r.into(t, &body)
			require.Equal(t, errorBody{Error: "Bad Request", Message: tc.field + ": " + tc.message,
				Details: []fieldError{{Field: tc.field, Message: tc.message}}}, body)
		})
	}
	t.Run("a well-formed query is served", func(t *testing.T) {
		t.Parallel()
		r := a.sendRaw(a.admin, http.MethodGet, a.base+"?count=5&search=a%20b&empty=&flag", "", "")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	})
}

// FuzzQueryFault: queryFault refuses exactly the queries url.ParseQuery
// refuses.
func FuzzQueryFault(f *testing.F) {
	for _, s := range []string{"", "a=1", "a=%zz", "%zz", "a=1;b=2", "a&&b", "=x", "a=%2", "a=%41&b=%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		_, perr := url.ParseQuery(raw)
		_, _, ok := queryFault(raw)
		if ok != (perr == nil) {
			t.Fatalf("queryFault(%q) ok=%v, url.ParseQuery error %v", raw, ok, perr)
		}
	})
}
