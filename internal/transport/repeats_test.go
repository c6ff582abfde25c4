package transport

import (
	"net/http"
	"testing"
)

// TestABodyRepeatingTheRequestsWordRefusesNothing: an answer to a request
// that named invalid_token itself (a caller's resource, scope or context,
// however escaped) refuses the token by its status only, never by the word
// in its body or challenges, which may be the caller's words repeated
// (a-read17 F1, F2; a-fix17 F1, F4); any other request's answer is read as
// before.
func TestABodyRepeatingTheRequestsWordRefusesNothing(t *testing.T) {
	for _, tc := range []struct {
		request string
		named   bool
	}{
		{`{"resources":[{"name":"invalid_token","scopes":["read"]}]}`, true},
		{`{"resources":[{"name":"orders","scopes":["INVALID_Token"]}]}`, true},
		{`{"context":{"path":"/x/invalid_token"}}`, true},
		{`invalid_token`, true},
		{`{"resources":[{"name":"orders","scopes":["invalid_tok"]}]}`, false},
		{`{"resources":[{"name":"nvalid_token","scopes":["_invalid","token_"]}]}`, true}, // the two words 3 bytes apart: may be read as one
		{`{"resources":[{"name":"orders","scopes":["invalid\\u005ftoken"]}]}`, true},     // decoded twice on its way back (a-fix17 F1)
		{`{"resources":[{"name":"invalid%5Ftoken","scopes":["read"]}]}`, true},
		{`{"resources":[{"name":"%5Cu0069nvalid_token","scopes":["read"]}]}`, true},                                  // percent, then JSON (a-fix17c F1)
		{"{\"resources\":[{\"name\":\"i\x00n\x00v\x00a\x00l\x00i\x00d\x00_\x00t\x00o\x00k\x00e\x00n\x00\"}]}", true}, // UTF-16 spelled (a-fix17c F2)
		{`{"resources":[{"name":"read\", error=\"inv\\alid_token","scopes":["read"]}]}`, true},                       // a quoted-pair (a-fix17c F5)
		{"{\"name\":\"invalid_to\u212aen\"}", true},                                                                  // a Kelvin sign, lower-cased by a server
		{`{"resources":[{"name":"invalid","scopes":["read","a-scope-far-away-token"]}]}`, false},
		{`token invalid`, false},
		{``, false},
		{`_`, false},
	} {
		if got := spells(tc.request); got != tc.named {
			t.Errorf("spells(%q) = %v, want %v", tc.request, got, tc.named)
		}
	}

	echoes := []string{
		`{"error":"invalid_request","scope":"invalid_token"}`,
		`[{"error":"invalid_request","value":"invalid_token"}]`,
		`unknown scope 'invalid_token'`,
	}
	for _, body := range echoes {
		for _, status := range []int{http.StatusBadRequest, http.StatusForbidden} {
			if r := readAnswer(status, "", []byte(body), true); r.refuses(status, SchemeBearer) {
				t.Errorf("%d %s to a request naming the word refused the token", status, body)
			}
			if r := readAnswer(status, "", []byte(body), false); !r.refuses(status, SchemeBearer) {
				t.Errorf("%d %s to a request not naming the word refused nothing", status, body)
			}
		}
	}
	// Nor does its challenge (a caller's scope templated into one: a-fix17
	// F4); a 401 still refuses it by its status.
	if r := readAnswer(http.StatusForbidden, `Bearer error="insufficient_scope", scope="read", error="invalid_token"`, nil, true); r.refuses(http.StatusForbidden, SchemeBearer) {
		t.Error("a challenge's invalid_token refused the token of a request naming the word")
	}
	if r := readAnswer(http.StatusForbidden, `Bearer error="invalid_token"`, nil, false); !r.refuses(http.StatusForbidden, SchemeBearer) {
		t.Error("a challenge's invalid_token refused nothing for a request not naming the word")
	}
	if r := readAnswer(http.StatusUnauthorized, "", []byte(echoes[0]), true); !r.refuses(http.StatusUnauthorized, SchemeBearer) {
		t.Error("a 401 refused nothing for a request naming the word")
	}
}
