package transport

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPeersSayTheSentinels: each client returns a shared sentinel in words
// that name it and its server, and the error matches the one sentinel value
// both clients export; the sentinels' own texts name no client.
func TestPeersSayTheSentinels(t *testing.T) {
	t.Parallel()
	pep, authzen := Peer("pep: gateway"), Peer("authzen: PDP")
	tests := []struct {
		sentinel          error
		own, pep, authzen string
	}{
		{ErrUnauthorized, "unauthorized", "pep: unauthorized", "authzen: unauthorized"},
		{ErrProofRejected, "DPoP proof rejected", "pep: DPoP proof rejected", "authzen: DPoP proof rejected"},
		{ErrNoToken, "no token", "pep: no token", "authzen: no token"},
		{ErrUnavailable, "server unavailable", "pep: gateway unavailable", "authzen: PDP unavailable"},
		{ErrCircuitOpen, "circuit breaker open", "pep: circuit breaker open", "authzen: circuit breaker open"},
		{ErrMalformedResponse, "malformed server response", "pep: malformed gateway response", "authzen: malformed PDP response"},
		{ErrClosed, "the client is closed; calls after Close fail, make a new client with New",
			"pep: the client is closed; calls after Close fail, make a new client with New",
			"authzen: the client is closed; calls after Close fail, make a new client with New"},
		{ErrTokenChanged, "the client's token changed while the call was under way; ask again",
			"pep: the client's token changed while the call was under way; ask again",
			"authzen: the client's token changed while the call was under way; ask again"},
	}
	for _, tt := range tests {
		t.Run(tt.own, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.own, tt.sentinel.Error())
			for p, want := range map[Peer]string{pep: tt.pep, authzen: tt.authzen, "": tt.pep} {
				err := p.Err(tt.sentinel)
				assert.Equal(t, want, err.Error())
				require.ErrorIs(t, err, tt.sentinel)
				assert.Equal(t, tt.sentinel == ErrCircuitOpen || tt.sentinel == ErrUnavailable, errors.Is(err, ErrUnavailable))
			}
		})
	}
	require.ErrorIs(t, ErrCircuitOpen, ErrUnavailable, "the sentinel itself, as pep and authzen export it")
	other := errors.New("not a sentinel")
	assert.Same(t, other, pep.Err(other), "any other error is returned as it is")
}

// TestResponseError: what a non-200 answer matches and says, for each
// client.
func TestResponseError(t *testing.T) {
	t.Parallel()
	answer := func(status int, header http.Header) *http.Response {
		if header == nil {
			header = http.Header{}
		}
		return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader(""))}
	}
	dpop := Ident{Scheme: SchemeDPoP, Token: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"} // "tok" would withhold "invalid_token"
	bearer := Ident{Scheme: SchemeBearer, Token: "tok"}
	proofRejected := http.Header{"Www-Authenticate": {`DPoP error="invalid_dpop_proof"`}}
	nonceOwed := http.Header{"Www-Authenticate": {`DPoP error="use_dpop_nonce"`}}
	algsOnly := http.Header{"Www-Authenticate": {`DPoP algs="ES256 PS256"`}}
	tokenRefused := http.Header{"Www-Authenticate": {`Bearer realm="x"`, `DPoP algs="ES256", error="invalid_token"`}}
	tests := []struct {
		name        string
		resp        *http.Response
		body        string
		id          Ident
		is          []error
		isNot       []error
		text        string
		errorName   string // when not "", the ErrorName wanted
		namesClient bool
	}{
		{name: "401", resp: answer(401, nil), body: `{"error":"Unauthorized","message":"expired"}`, id: bearer,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected, ErrUnavailable},
			text: "authzen: PDP answered 401 Unauthorized: expired"},
		{name: "401 blaming the proof", resp: answer(401, proofRejected), id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 blaming a Bearer request's proof is the token's", resp: answer(401, proofRejected), id: bearer,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 still owing a nonce blames the proof", resp: answer(401, nonceOwed), id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		// a-dpop13 F2: the JSON error of RFC 9449 section 8 under a
		// challenge that names no error, or none at all.
		{name: "401 still owing a nonce in its body blames the proof", resp: answer(401, nil),
			body: `{"error":"use_dpop_nonce","error_description":"nonce required"}`, id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized},
			text: "authzen: PDP answered 401 Unauthorized (use_dpop_nonce)"},
		{name: "401 still owing a nonce in its body under a challenge without error blames the proof",
			resp: answer(401, algsOnly), body: `{"error":"use_dpop_nonce"}`, id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 blaming the proof in its body", resp: answer(401, algsOnly), body: `{"error":"invalid_dpop_proof"}`, id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 whose challenge refuses the token, whatever its body", resp: answer(401, tokenRefused),
			body: `{"error":"use_dpop_nonce"}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		// a-dpop14 F2: one verdict from every challenge value and the
		// body; when they conflict, the one refusing the token wins.
		{name: "401 whose body refuses the token, whatever its challenge", resp: answer(401, proofRejected),
			body: `{"error":"invalid_token"}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 asking a nonce, then refusing the token in a second challenge", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP error="use_dpop_nonce"`, `DPoP error="invalid_token"`}}),
			is:   []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 asking a nonce, then refusing the token in one value", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP error="use_dpop_nonce", DPoP error="invalid_token"`}}),
			is:   []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 blaming the proof, then refusing the token", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP error="invalid_dpop_proof"`, `Bearer realm="x"`, `DPoP error="invalid_token"`}}),
			is:   []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 asking a nonce beside a Bearer challenge refusing the token", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`, `DPoP error="use_dpop_nonce"`}}),
			is:   []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 asking a nonce beside a Bearer challenge of another error blames the proof", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", DPoP error="use_dpop_nonce"`}}),
			is:   []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 asking a nonce under the server's own error name blames the proof", resp: answer(401, nonceOwed),
			body: `{"error":"Unauthorized","message":"nonce"}`, id: dpop, is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 to a DPoP request saying nothing of DPoP refuses the token", resp: answer(401, algsOnly),
			body: `{"error":"Unauthorized","message":"expired"}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 owing a nonce in the body of a Bearer request is the token's", resp: answer(401, nil),
			body: `{"error":"use_dpop_nonce"}`, id: bearer, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "400 owing a nonce in its body matches neither", resp: answer(400, nil), body: `{"error":"use_dpop_nonce"}`, id: dpop,
			isNot: []error{ErrUnauthorized, ErrProofRejected, ErrUnavailable}},
		// a-dpop15 F5: ErrorName names the code the verdict chose, read
		// from the body's members named exactly "error" (encoding/json's
		// last case-folded member named the opposite).
		{name: "401 whose body refuses the token, then asks a nonce", resp: answer(401, algsOnly),
			body: `{"error":"invalid_token","error":"use_dpop_nonce"}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected},
			errorName: "invalid_token", text: "authzen: PDP answered 401 Unauthorized (invalid_token)"},
		// a-dpop16 F1: invalid_token anywhere in the body refuses the
		// token, under any member name, nested or not, whether the body
		// parses or not; where it stands decides nothing.
		{name: "401 whose body asks a nonce, then says Error in another case", resp: answer(401, algsOnly),
			body: `{"error":"use_dpop_nonce","Error":"invalid_token"}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected},
			errorName: "invalid_token"},
		{name: "401 whose body blames the proof, then says ERROR in another case", resp: answer(401, algsOnly),
			body: `{"error":"invalid_dpop_proof","ERROR":"invalid_token"}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected},
			errorName: "invalid_token"},
		{name: "403 whose body refuses the token in a nested error object", resp: answer(403, nil),
			body: `{"error":{"code":"invalid_token","message":"the token was revoked"}}`, id: dpop, is: []error{ErrUnauthorized}, errorName: "invalid_token"},
		{name: "400 whose body refuses the token in a list of errors", resp: answer(400, nil),
			body: `{"error":"Bad Request","errors":[{"error":"invalid_token"}]}`, id: dpop, is: []error{ErrUnauthorized}, errorName: "invalid_token"},
		{name: "400 whose message only mentions invalid_token (a caller's words repeated)", resp: answer(400, nil),
			body: `{"error":"invalid_request","message":"unknown scope 'invalid_token'"}`, id: dpop, isNot: []error{ErrUnauthorized, ErrProofRejected}, errorName: "invalid_request"},
		{name: "403 whose plain-text body names invalid_token", resp: answer(403, nil), body: "invalid_token: the token was revoked", id: dpop,
			is: []error{ErrUnauthorized}, errorName: "invalid_token"},
		{name: "401 asking a nonce whose body refuses the token in a nested error object", resp: answer(401, nonceOwed),
			body: `{"error":{"code":"invalid_token"}}`, id: dpop, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}, errorName: "invalid_token"},
		{name: "401 whose challenge refuses the token names it, whatever the body asks", resp: answer(401, tokenRefused),
			body: `{"error":"use_dpop_nonce"}`, id: dpop, is: []error{ErrUnauthorized}, errorName: "invalid_token"},
		// a-dpop15 F3: every status that can carry a credential error has
		// the one verdict; a 400 or 403 naming invalid_token refuses the
		// token, any other error of theirs does not.
		{name: "400 whose challenge refuses the token", resp: answer(400, tokenRefused), body: `{"error":"Bad Request"}`, id: dpop,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}, errorName: "invalid_token"},
		{name: "400 whose body refuses the token", resp: answer(400, algsOnly), body: `{"error":"invalid_token"}`, id: dpop,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "403 whose body refuses the token", resp: answer(403, nil), body: `{"error":"invalid_token"}`, id: dpop,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "a Bearer request's 400 refusing the token", resp: answer(400, http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`}}), id: bearer,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "403 of insufficient scope refuses no token", resp: answer(403, http.Header{"Www-Authenticate": {`DPoP error="insufficient_scope"`}}),
			body: `{"error":"Forbidden"}`, id: dpop, isNot: []error{ErrUnauthorized, ErrProofRejected}, errorName: "Forbidden"},
		// a-dpop15 F1: a body the client cannot read whole is unclear, and
		// invalid_token anywhere in it refuses the token in any status.
		// a-dpop16 F2: an unclear body the server finished, within
		// MaxBody, was searched whole: of itself it refuses nothing (a
		// nonce request with a raw tab retired a valid token); one past
		// MaxBody, whose end was never read, refuses the token.
		{name: "401 asking a nonce, its body cut", resp: answer(401, nonceOwed), body: `{"error":"use_dpop_nonce","message":"a`, id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized},
			text: "authzen: PDP answered 401 Unauthorized (use_dpop_nonce) (the body could not be read whole)"},
		{name: "401 asking a nonce, a raw tab in its body", resp: answer(401, nonceOwed), body: "{\"message\":\"a\tb\",\"error\":\"use_dpop_nonce\"}", id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 asking a nonce, a number with a leading zero in its body", resp: answer(401, nonceOwed), body: `{"error":"use_dpop_nonce","code":0401}`, id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 naming no error, a raw tab in its body", resp: answer(401, algsOnly), body: "{\"message\":\"a\tb\"}", id: dpop,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 asking a nonce, something after its body", resp: answer(401, nonceOwed), body: `{"error":"use_dpop_nonce"} {"error":"invalid_token"}`, id: dpop,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "401 asking a nonce, its body past MaxBody", resp: answer(401, nonceOwed),
			body: `{"error":"use_dpop_nonce","trace":"` + strings.Repeat("x", MaxBody) + `"}`, id: dpop,
			is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "400 naming invalid_token after a raw tab", resp: answer(400, nil), body: "{\"message\":\"a\tb\",\"error\":\"invalid_token\"}", id: dpop,
			is: []error{ErrUnauthorized}},
		{name: "400 with an unclear body naming no invalid_token refuses no token", resp: answer(400, nil), body: "{\"message\":\"a\tb\"}", id: dpop,
			isNot: []error{ErrUnauthorized, ErrProofRejected}},
		// a-fix15 F2: an unclear body is searched as a JSON reader sees
		// it too, every string escape decoded, left to right.
		{name: "400 naming invalid_token, escaped, after a raw tab", resp: answer(400, algsOnly),
			body: "{\"message\":\"a\tb\",\"error\":\"invalid\\u005ftoken\"}", id: dpop, is: []error{ErrUnauthorized}, errorName: "invalid_token"},
		{name: "403 naming invalid_token, escaped in upper case, after a raw tab", resp: answer(403, nil),
			body: "{\"message\":\"a\tb\",\"error\":\"\\u0069nvalid\\u005Ftoken\"}", id: dpop, is: []error{ErrUnauthorized}},
		{name: "403 naming invalid_token, escaped, in a body cut short", resp: answer(403, nil),
			body: `{"error":"invalid\u005ftoken","message":"a`, id: dpop, is: []error{ErrUnauthorized}},
		{name: "400 whose escaped backslash is no escape of invalid_token refuses no token", resp: answer(400, nil),
			body: "{\"message\":\"a\tb\",\"error\":\"invalid\\\\u005ftoken\"}", id: dpop, isNot: []error{ErrUnauthorized}},
		// a-fix15 F1: the WWW-Authenticate field split over several lines
		// (RFC 9110 section 5.3, at any comma) reads as its lines joined
		// with ", ": a parameter starting a line belongs to the challenge
		// before it.
		{name: "401 asking a nonce in a challenge split over two lines", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP algs="ES256"`, `error="use_dpop_nonce", error_description="nonce required"`}}),
			body: `{"error":"Unauthorized"}`, is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}, errorName: "use_dpop_nonce"},
		{name: "401 blaming the proof in a challenge split after a realm", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`Bearer realm="gw"`, `DPoP realm="gw"`, `error="invalid_dpop_proof"`}}),
			is:   []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 refusing the token in a split challenge, asking a nonce in the body", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP algs="ES256"`, `error="invalid_request"`}}),
			body: `{"error":"use_dpop_nonce"}`, is: []error{ErrUnauthorized}, isNot: []error{ErrProofRejected}},
		{name: "403 refusing the token in a Bearer challenge split over two lines", id: dpop,
			resp: answer(403, http.Header{"Www-Authenticate": {`Bearer realm="gw"`, `error="invalid_token"`}}),
			body: `{"error":"Forbidden"}`, is: []error{ErrUnauthorized}},
		// a-dpop15 F2: a nonce request the parse used to lose: a bare word
		// after a non-token character is no scheme; a BOM is skipped.
		{name: "401 asking a nonce after an unquoted algs list", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP algs=ES256 PS256, error="use_dpop_nonce"`}}), body: `{"error":"Unauthorized"}`,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 asking a nonce after an unquoted realm with a slash", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP realm=api.example.com/v1, error="use_dpop_nonce"`}}),
			is:   []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 asking a nonce after an unquoted error_uri", id: dpop,
			resp: answer(401, http.Header{"Www-Authenticate": {`DPoP error_uri=https://gw.example/errors, error="use_dpop_nonce"`}}),
			is:   []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}},
		{name: "401 asking a nonce in a body behind a BOM", resp: answer(401, algsOnly), body: "\ufeff{\"error\":\"use_dpop_nonce\"}", id: dpop,
			is: []error{ErrProofRejected}, isNot: []error{ErrUnauthorized}, errorName: "use_dpop_nonce"},
		{name: "401 to a request sent without the credential refuses no token", resp: answer(401, nil), id: Ident{},
			isNot: []error{ErrUnauthorized, ErrProofRejected}, text: "authzen: PDP answered 401 Unauthorized"},
		{name: "401 owing a nonce to a request sent without the credential blames no proof", resp: answer(401, nonceOwed), id: Ident{},
			isNot: []error{ErrUnauthorized, ErrProofRejected}},
		{name: "503", resp: answer(503, nil), body: `{"error":"Service Unavailable"}`, id: bearer,
			is: []error{ErrUnavailable}, isNot: []error{ErrUnauthorized}, text: "authzen: PDP answered 503 Service Unavailable"},
		{name: "400 naming the client", resp: answer(400, nil), body: `{"error":"Bad Request","message":"invalid body","details":[{"field":"clientId"}]}`,
			id: bearer, isNot: []error{ErrUnavailable}, namesClient: true},
		{name: "400 on another field", resp: answer(400, nil), body: `{"error":"Bad Request","details":[{"field":"resources"}]}`, id: bearer},
		{name: "a redirect", resp: answer(302, nil), id: bearer, text: "authzen: PDP answered 302 Found: redirects are not followed"},
		{name: "an error name of the server's own", resp: answer(418, nil), body: `{"error":"teapot"}`, id: bearer,
			text: "authzen: PDP answered 418 I'm a teapot (teapot)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Peer("authzen: PDP").NewResponseError(tt.resp, []byte(tt.body), tt.id)
			for _, want := range tt.is {
				assert.ErrorIs(t, e, want)
			}
			for _, not := range tt.isNot {
				assert.NotErrorIs(t, e, not)
			}
			if tt.text != "" {
				assert.Equal(t, tt.text, e.Error())
			}
			if tt.errorName != "" {
				assert.Equal(t, tt.errorName, e.ErrorName)
			}
			assert.Equal(t, tt.namesClient, NamesClient(e))
		})
	}

	m := Peer("authzen: PDP").Malformed("the answer has %d evaluations for %d asked", 1, 2)
	require.ErrorIs(t, m, ErrMalformedResponse)
	assert.Equal(t, "authzen: PDP answered 200 OK: malformed PDP response: the answer has 1 evaluations for 2 asked", m.Error(),
		"the client's name is written once")
	// A ResponseError a user makes reads as pep's and matches by its status.
	for status, want := range map[int]string{
		401: "pep: gateway answered 401 Unauthorized: bad token",
		429: "pep: gateway answered 429 Too Many Requests: bad token",
		503: "pep: gateway answered 503 Service Unavailable: bad token",
	} {
		made := &ResponseError{StatusCode: status, ErrorName: http.StatusText(status), Message: "bad token"}
		assert.Equal(t, want, made.Error())
		assert.Equal(t, status == 401, errors.Is(made, ErrUnauthorized), status)
		assert.Equal(t, status == 503, errors.Is(made, ErrUnavailable), status)
	}
}

// TestJSONUnescapedSeesWhatAJSONReaderSees: the search of an unclear body
// (a-fix15 F2) decodes string escapes as encoding/json does, left to
// right; a broken escape is kept as it is, and nothing panics.
func TestJSONUnescapedSeesWhatAJSONReaderSees(t *testing.T) {
	t.Parallel()
	for _, quoted := range []string{
		`"invalid\u005ftoken"`, `"\u0069nvalid\u005Ftoken"`, `"invalid\\u005ftoken"`, `"a\/b\"c\\d\b\f\n\r\t"`,
		`"\ud83d\ude00 smile"`, `"\ud83d alone"`, `"\u00e9t\u00E9"`, `"\\\\u005f"`,
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(quoted), &want), quoted)
		assert.Equal(t, want, string(jsonUnescaped([]byte(quoted[1:len(quoted)-1]))), quoted)
	}
	for _, broken := range []string{`\`, `a\u00`, `\u12G4`, `\x`, `\ud83d\u`, `\ud83d\uZZZZ`} {
		assert.NotPanics(t, func() { jsonUnescaped([]byte(broken)) }, broken)
	}
	assert.Equal(t, `a\u00`, string(jsonUnescaped([]byte(`a\u00`))), "a cut escape is kept")
}
