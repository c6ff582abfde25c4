package pep

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzAuthorizeBody$' -fuzztime 10m -parallel=1 ./pep

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceAuthorizeBody is authorizeBody written with encoding/json, as it
// was before the hand-written encoder: the encoder must produce its bytes.
func referenceAuthorizeBody(t *testing.T, clientID string, pairs []pair, context string) []byte {
	t.Helper()
	type resource struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	var res []resource
	for _, p := range pairs {
		if p.scope == "" {
			res = append(res, resource{Name: p.resource, Scopes: []string{}})
			continue
		}
		if n := len(res); n > 0 && res[n-1].Name == p.resource && len(res[n-1].Scopes) > 0 &&
			len(res[n-1].Scopes) < maxScopesPerResource {
			res[n-1].Scopes = append(res[n-1].Scopes, p.scope)
			continue
		}
		res = append(res, resource{Name: p.resource, Scopes: []string{p.scope}})
	}
	b, err := json.Marshal(struct {
		ClientID  string          `json:"clientId"`
		Resources []resource      `json:"resources"`
		Context   json.RawMessage `json:"context"`
	}{clientID, res, json.RawMessage(context)})
	require.NoError(t, err)
	return b
}

func TestAuthorizeBodyMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	many := func(resource string, n int) []pair {
		ps := make([]pair, n)
		for i := range ps {
			ps[i] = pair{resource: resource, scope: fmt.Sprintf("s%d", i)}
		}
		return ps
	}
	awkward := []string{`quote"d`, `back\slash`, "<script>&", "tab\tnew\nline\x01", "caf\u00e9", "\u2028\u2029",
		"bad utf8 \xff\xfe", "emoji \U0001F600", "\x7f"}
	tests := []struct {
		name     string
		clientID string
		pairs    []pair
		context  string
	}{
		{"one pair", "orders-api", []pair{{"orders", "read"}}, noContext},
		{"grouped and split by resource", "orders-api",
			[]pair{{"orders", "read"}, {"orders", "write"}, {"invoices", "read"}, {"orders", "delete"}}, noContext},
		{"wildcards", "orders-api",
			[]pair{{"orders", ""}, {"orders", "read"}, {"*", ""}, {"*", "read"}, {"invoices", "read"}, {"invoices", ""}}, noContext},
		{"more scopes than one entry holds", "c", append(many("orders", 120), pair{"orders", ""}), noContext},
		{"request context", "orders-api", []pair{{"orders", "read"}},
			contextJSON(&RequestContext{Method: "GET", Path: "/orders/<1>", Headers: map[string]string{"b": "2", "a": "1"}})},
	}
	for _, s := range awkward {
		tests = append(tests, struct {
			name     string
			clientID string
			pairs    []pair
			context  string
		}{"escaping " + fmt.Sprintf("%q", s), s, []pair{{s, s}, {s, "x"}, {"r", s}}, noContext})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := referenceAuthorizeBody(t, tt.clientID, tt.pairs, tt.context)
			assert.Equal(t, string(want), string(authorizeBody(tt.clientID, tt.pairs, tt.context)))
		})
	}
}

// FuzzAuthorizeBody compares the encoder with encoding/json on arbitrary
// strings and groupings:
//
//	go test -run '^$' -fuzz '^FuzzAuthorizeBody$' -fuzztime 1m ./pep
func FuzzAuthorizeBody(f *testing.F) {
	f.Add("orders-api", "orders", "read", "orders", "write", "")
	f.Add("c", "r", "", "r", "s", "<&>")
	f.Add("\xff", "\u2028", "\x00", "*", "", "\"\\")
	f.Fuzz(func(t *testing.T, clientID, r1, s1, r2, s2, s3 string) {
		pairs := []pair{{r1, s1}, {r2, s2}, {r2, s3}, {r1, s2}}
		for i := range pairs {
			if pairs[i].resource == "" {
				pairs[i].resource = "r"
			}
		}
		want := referenceAuthorizeBody(t, clientID, pairs, noContext)
		if got := authorizeBody(clientID, pairs, noContext); string(got) != string(want) {
			t.Fatalf("authorizeBody\n got %s\nwant %s", got, want)
		}
	})
}
