package transport

import (
	"net/http"
	"testing"
)

// TestABodyRepeatingTheRequestsWordRefusesNothing: an answer to a request
// that named invalid_token itself (a caller's resource, scope or context)
// refuses the token by its challenges and status only, never by its body,
// which may be the caller's words repeated (a-read17 F1, F2); any other
// request's answer is read as before.
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
		{`{"resources":[{"name":"nvalid_token","scopes":["_invalid","token_"]}]}`, false},
		{``, false},
		{`_`, false},
	} {
		if got := namesInvalidToken([]byte(tc.request)); got != tc.named {
			t.Errorf("namesInvalidToken(%q) = %v, want %v", tc.request, got, tc.named)
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
	// Its challenge still refuses it, and a 401 by its status.
	if r := readAnswer(http.StatusForbidden, `Bearer error="invalid_token"`, []byte(echoes[0]), true); !r.refuses(http.StatusForbidden, SchemeBearer) {
		t.Error("a challenge's invalid_token refused nothing for a request naming the word")
	}
	if r := readAnswer(http.StatusUnauthorized, "", []byte(echoes[0]), true); !r.refuses(http.StatusUnauthorized, SchemeBearer) {
		t.Error("a 401 refused nothing for a request naming the word")
	}
}
