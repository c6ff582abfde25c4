package pep

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeSeeds are authorize answers of both kinds: the shape the scanner
// reads itself and the ones it leaves to encoding/json.
var decodeSeeds = []string{
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	" {\n \"status\" : \"DENY\" ,\t\"permissions\" : [ { \"resource\" : \"a b\" , \"scope\" : \"\" , \"status\" : \"x\" } , {} ] }\r\n",
	`{"permissions":[],"status":"ERROR"}`,
	`{}`,
	`{"status":"GRANT"}`,
	`{"status":"GRANT","permissions":[{"status":"DENY","scope":"s","resource":"r"}]}`,
	// left to encoding/json
	`{"STATUS":"GRANT","Permissions":[{"Resource":"orders","SCOPE":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","status":"DENY"}`,
	`{"status":"GRANT","permissions":[{"resource":"a","resource":"b"}]}`,
	`{"status":"\u0047RANT","permissions":[{"resource":"caf\u00e9","scope":"r\"","status":"GRANT"}]}`,
	"{\"status\":\"GRANT\",\"permissions\":[{\"resource\":\"caf\xc3\xa9\",\"scope\":\"\xff\",\"status\":\"GRANT\"}]}",
	`{"status":"GRANT","permissions":null}`,
	`{"status":"GRANT","permissions":[null]}`,
	`{"status":"GRANT","extra":1,"permissions":[]}`,
	`{"status":"GRANT","permissions":[{"resource":"r","scope":"s","status":"GRANT","why":[]}]}`,
	`{"status":1}`,
	`{"status":"GRANT"} {}`,
	`{"status":"GRANT",}`,
	`{"status":"GRANT","permissions":[{"resource":"r"},]}`,
	`{"status":"GRANT"`,
	`[]`, `null`, ``, ` `, "\xef\xbb\xbf{}", `"GRANT"`,
}

// requireDecodesLikeEncodingJSON checks decodeAuthorize against
// json.Unmarshal on body: the same error or none, and then the same value.
func requireDecodesLikeEncodingJSON(t *testing.T, body []byte) {
	t.Helper()
	var want, got wireAuthorizeResponse
	wantErr := json.Unmarshal(body, &want)
	gotErr := decodeAuthorize(body, &got)
	if wantErr == nil && errors.Is(gotErr, errAmbiguousMember) {
		return // the one refusal on purpose; TestDecodeAuthorizeRefusesAmbiguousMembers
	}
	if wantErr != nil {
		require.EqualError(t, gotErr, wantErr.Error(), "body %q", body)
		return
	}
	require.NoError(t, gotErr, "body %q", body)
	require.Equal(t, want, got, "body %q", body)
}

func TestDecodeAuthorizeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, body := range decodeSeeds {
		requireDecodesLikeEncodingJSON(t, []byte(body))
	}
	var many strings.Builder
	many.WriteString(`{"status":"GRANT","permissions":[`)
	for i := range 200 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"resource":"r","scope":"s` + strings.Repeat("x", i) + `","status":"DENY"}`)
	}
	many.WriteString(`]}`)
	requireDecodesLikeEncodingJSON(t, []byte(many.String()))
}

func TestDecodeAuthorizeRefusesAmbiguousMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		ambiguous  bool
	}{
		{"top-level status twice", `{"status":"DENY","status":"GRANT","permissions":[]}`, true},
		{"pair status twice", `{"status":"GRANT","permissions":[{"resource":"r","scope":"s","status":"DENY","status":"GRANT"}]}`, true},
		{"permissions twice", `{"status":"GRANT","permissions":[],"permissions":[{"resource":"r","scope":"s","status":"GRANT"}]}`, true},
		{"resource twice", `{"status":"GRANT","permissions":[{"resource":"x","resource":"r","scope":"s","status":"GRANT"}]}`, true},
		{"status in upper case", `{"status":"DENY","permissions":[{"resource":"r","scope":"s","STATUS":"GRANT"}]}`, true},
		{"scope spelt with a long s", `{"status":"GRANT","permissions":[{"resource":"r","ſcope":"s","status":"GRANT"}]}`, true},
		{"an escaped name that reads as status", `{"status":"GRANT","permissions":[{"resource":"r","scope":"s","status":"DENY","st\u0061tus":"GRANT"}]}`, true},
		{"an unknown member twice is harmless", `{"status":"GRANT","x":1,"x":2,"permissions":[{"resource":"r","scope":"s","status":"GRANT"}]}`, false},
		{"each object names its own members", `{"status":"GRANT","permissions":[{"resource":"r","scope":"s","status":"GRANT"},{"resource":"r","scope":"t","status":"GRANT"}]}`, false},
		{"a nested unknown object may repeat names of its own", `{"status":"GRANT","meta":{"status":1},"permissions":[{"resource":"r","scope":"s","status":"GRANT","why":{"status":"x"}}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w wireAuthorizeResponse
			err := decodeAuthorize([]byte(tt.body), &w)
			if tt.ambiguous {
				require.ErrorIs(t, err, errAmbiguousMember)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestDecodeAuthorizeReadsTheCommonShapeItself(t *testing.T) {
	t.Parallel()
	for _, body := range decodeSeeds[:6] {
		var w wireAuthorizeResponse
		assert.True(t, (&scanner{b: []byte(body)}).authorize(&w), "body %q", body)
	}
}

// FuzzDecodeAuthorize holds decodeAuthorize to json.Unmarshal's reading of
// any body:
//
//	go test -run '^$' -fuzz '^FuzzDecodeAuthorize$' -fuzztime 5m ./pep
func FuzzDecodeAuthorize(f *testing.F) {
	for _, body := range decodeSeeds {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		requireDecodesLikeEncodingJSON(t, body)
	})
}
