package mockserver

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// fastPathBodies are authorize bodies the scanner must read (fast: true)
// or leave to strictjson.Unmarshal.
var fastPathBodies = []struct {
	name, body string
	fast       bool
}{
	{"plain", benchAuthorizeBody, true},
	{"spaced", " {\n\t\"clientId\" : \"a\" ,\r\n \"resources\" : [ { \"name\" : \"r\" , \"scopes\" : [ \"s\" ] } ] , \"context\" : { } }\n", true},
	{"empty context", `{"clientId":"a","resources":[{"name":"r"}],"context":{}}`, true},
	{"empty arrays", `{"clientId":"a","resources":[],"context":{"attributes":{}}}`, true},
	{"empty scopes", `{"clientId":"a","resources":[{"name":"r","scopes":[]}],"context":{}}`, true},
	{"every attribute", `{"clientId":"a","resources":[{"name":"r"}],"context":{"attributes":{"method":"GET","path":"/","headers":"h","body":"b"}}}`, true},
	{"members in another order", `{"context":{},"resources":[{"scopes":["s"],"name":"r"}],"clientId":"a"}`, true},
	{"nothing", `{}`, true},

	{"an escape", `{"clientId":"a\u0062","resources":[],"context":{}}`, false},
	{"an escaped name", `{"client\u0049d":"a","resources":[],"context":{}}`, false},
	{"non-ASCII", `{"clientId":"é","resources":[],"context":{}}`, false},
	{"null", `{"clientId":null,"resources":[],"context":{}}`, false},
	{"null context", `{"clientId":"a","resources":[],"context":null}`, false},
	{"null attributes", `{"clientId":"a","resources":[],"context":{"attributes":null}}`, false},
	{"a number", `{"clientId":1,"resources":[],"context":{}}`, false},
	{"a string for the resources", `{"clientId":"a","resources":"r","context":{}}`, false},
	{"an unknown member", `{"clientId":"a","resources":[],"context":{},"extra":1}`, false},
	{"an unknown attribute", `{"clientId":"a","resources":[],"context":{"attributes":{"verb":"GET"}}}`, false},
	{"a member in another case", `{"clientID":"a","resources":[],"context":{}}`, false},
	{"a member twice", `{"clientId":"a","clientId":"b","resources":[],"context":{}}`, false},
	{"a scope twice is data", `{"clientId":"a","resources":[{"name":"r","scopes":["s","s"]}],"context":{}}`, true},
	{"trailing data", `{"clientId":"a","resources":[],"context":{}} {}`, false},
	{"a trailing comma", `{"clientId":"a","resources":[],"context":{},}`, false},
	{"a trailing comma in an array", `{"clientId":"a","resources":[{"name":"r"},],"context":{}}`, false},
	{"unterminated", `{"clientId":"a","resources":[`, false},
	{"an array", `[]`, false},
	{"a control character", "{\"clientId\":\"a\tb\",\"resources\":[],\"context\":{}}", false},
}

// TestAuthorizeFastPathAgreesWithUnmarshal: the scanner reads the plain
// bodies, gives up on the others, and whatever it reads, Unmarshal reads
// into the same value.
func TestAuthorizeFastPathAgreesWithUnmarshal(t *testing.T) {
	t.Parallel()
	for _, tt := range fastPathBodies {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fast authorizeRequest
			ok := fast.decodeFast([]byte(tt.body))
			require.Equal(t, tt.fast, ok)
			if !ok {
				require.Zero(t, fast, "a body given up leaves the value zero")
				return
			}
			var slow authorizeRequest
			require.NoError(t, strictjson.Unmarshal([]byte(tt.body), &slow))
			require.Equal(t, slow, fast)
		})
	}
}

// FuzzAuthorizeFastPath: a body the scanner reads, Unmarshal reads into
// the same value.
func FuzzAuthorizeFastPath(f *testing.F) {
	for _, tt := range fastPathBodies {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast authorizeRequest
		if !fast.decodeFast(body) {
			require.Zero(t, fast)
			return
		}
		var slow authorizeRequest
		require.NoError(t, strictjson.Unmarshal(body, &slow), "the scanner read a body Unmarshal refuses")
		require.Equal(t, slow, fast)
	})
}
