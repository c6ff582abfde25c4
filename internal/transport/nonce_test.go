package transport

import (
	"cmp"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nonceCredential is a DPoP credential whose "proof" is the nonce it was
// given, in a header a scripted server reads.
type nonceCredential struct{}

func (nonceCredential) Ident() Ident  { return Ident{Scheme: SchemeDPoP, Token: "a-token"} }
func (nonceCredential) Usable() error { return nil }
func (nonceCredential) Authorize(r *http.Request, nonce string) error {
	r.Header["Authorization"] = []string{"DPoP a-token"}
	r.Header["X-Proof-Nonce"] = []string{nonce}
	return nil
}

// step is one scripted answer: its status and the DPoP-Nonce it carries
// ("" for none). A 401 or 400 carries what its script's asking says.
type step struct {
	status int
	nonce  string
}

// asking is what a scripted 401 or 400 says besides its DPoP-Nonce: its
// WWW-Authenticate ("" for none) and its body.
type asking struct {
	name, challenge, body string
	// more are WWW-Authenticate values sent after challenge.
	more []string
	// cut fails the body's read after body (a reset, the call's deadline).
	cut bool
}

// The forms of a nonce request: the use_dpop_nonce error in the DPoP
// challenge, or in the JSON body as RFC 9449 section 8 words it, with a
// DPoP challenge that names no error or with no challenge at all (a-dpop13
// F2).
var (
	askInChallenge     = asking{name: "in the challenge", challenge: `DPoP error="use_dpop_nonce"`, body: `{}`}
	askInBody          = asking{name: "in the body", body: `{"error":"use_dpop_nonce","error_description":"nonce required"}`}
	askInBodyUnderAlgs = asking{name: "in the body under a challenge without error", challenge: `DPoP algs="ES256 PS256"`,
		body: `{"error":"use_dpop_nonce","error_description":"nonce required"}`}
	nonceAskings = []asking{askInChallenge, askInBody, askInBodyUnderAlgs}
)

// scripted answers the requests it receives with its steps in turn and
// records the nonce each request's proof carried. Its 401s and 400s say
// what ask says (askInChallenge when nil).
type scripted struct {
	mu    sync.Mutex
	steps []step
	ask   *asking
	// later, when set, is what every answer after the first says,
	// whatever its status.
	later *asking
	sent  []string
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, r.Header.Get("X-Proof-Nonce"))
	st := step{status: http.StatusInternalServerError}
	if len(s.steps) > 0 {
		st, s.steps = s.steps[0], s.steps[1:]
	}
	h := http.Header{}
	if st.nonce != "" {
		h.Set("DPoP-Nonce", st.nonce)
	}
	body, cut := `{}`, false
	later := s.later != nil && len(s.sent) > 1
	if st.status == http.StatusUnauthorized || st.status == http.StatusBadRequest || later {
		ask := askInChallenge
		if s.ask != nil {
			ask = *s.ask
		}
		if later {
			ask = *s.later
		}
		if ask.challenge != "" {
			h.Set("WWW-Authenticate", ask.challenge)
		}
		for _, v := range ask.more {
			h.Add("WWW-Authenticate", v)
		}
		body, cut = ask.body, ask.cut
	}
	if cut {
		return &http.Response{StatusCode: st.status, Header: h, ContentLength: -1, Request: r,
			Body: io.NopCloser(io.MultiReader(strings.NewReader(body), iotest.ErrReader(io.ErrUnexpectedEOF)))}, nil
	}
	return &http.Response{StatusCode: st.status, Header: h, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}, nil
}

// scriptedExchanger sends to rt with 2 retries, 1 ms apart.
func scriptedExchanger(rt *scripted) *Exchanger {
	logger := slog.New(slog.DiscardHandler)
	return &Exchanger{Base: rt, Logger: logger, Observe: quietObserver{},
		Retry: RetryPolicy{Max: 2, MinWait: time.Millisecond, MaxWait: time.Millisecond, Logger: logger, Retries: new(atomic.Uint64)}}
}

// TestEveryAnswerUpdatesTheNonce: whatever an answer's status and wherever
// in the retry chain it arrives (a first attempt, the nonce resend, a
// retry), its DPoP-Nonce is the one the next proof to that origin carries.
func TestEveryAnswerUpdatesTheNonce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []step
		// want is the nonce each request carried, over two calls.
		want []string
		// firstOK is whether the first call ends with a 200.
		firstOK bool
	}{
		{
			name: "the resend's 503 rotates the nonce for the retry",
			steps: []step{
				{http.StatusUnauthorized, "n1"}, {http.StatusServiceUnavailable, "n2"}, {http.StatusOK, ""},
				{http.StatusOK, ""},
			},
			want:    []string{"", "n1", "n2", "n2"},
			firstOK: true,
		},
		{
			name: "a retry's 502 rotates the nonce for the next retry",
			steps: []step{
				{http.StatusServiceUnavailable, "n1"}, {http.StatusBadGateway, "n2"}, {http.StatusOK, ""},
				{http.StatusOK, ""},
			},
			want:    []string{"", "n1", "n2", "n2"},
			firstOK: true,
		},
		{
			name: "the resend's 200 rotates the nonce for the next call",
			steps: []step{
				{http.StatusUnauthorized, "n1"}, {http.StatusOK, "n2"},
				{http.StatusOK, ""},
			},
			want:    []string{"", "n1", "n2"},
			firstOK: true,
		},
		{
			name: "the resend's 403 rotates the nonce for the next call",
			steps: []step{
				{http.StatusUnauthorized, "n1"}, {http.StatusForbidden, "n2"},
				{http.StatusOK, ""},
			},
			want: []string{"", "n1", "n2"},
		},
		{
			name: "a 429 rotates the nonce",
			steps: []step{
				{http.StatusTooManyRequests, "n1"}, {http.StatusOK, ""},
				{http.StatusOK, ""},
			},
			want:    []string{"", "n1", "n1"},
			firstOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := &scripted{steps: tt.steps}
			x := scriptedExchanger(rt)
			_, err := x.Post(t.Context(), nonceCredential{}, "https://gw.example/decide", []byte(`{}`), nil, true, nil)
			if tt.firstOK {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			_, err = x.Post(t.Context(), nonceCredential{}, "https://gw.example/decide", []byte(`{}`), nil, true, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, rt.sent)
		})
	}
}

// TestNonceChallengeIsResentAtMostOnce: a nonce request, in whichever
// form (nonceAskings), is answered by sending the request once more with
// the new nonce, never for the nonce just refused, and at most once per
// call however many requests its attempts (retries included) meet; the
// request that stands then fails the call as a refused proof, not a
// refused token.
func TestNonceChallengeIsResentAtMostOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []step
		// want is the nonce each request of one call carried.
		want []string
	}{
		{
			name:  "the server repeats the nonce just used",
			steps: []step{{http.StatusUnauthorized, "n1"}, {http.StatusUnauthorized, "n1"}},
			want:  []string{"", "n1"},
		},
		{
			name:  "the server sends a new nonce every time",
			steps: []step{{http.StatusUnauthorized, "n1"}, {http.StatusUnauthorized, "n2"}},
			want:  []string{"", "n1"},
		},
		{
			name: "a retry meets a new challenge after the resend",
			steps: []step{
				{http.StatusUnauthorized, "n1"}, {http.StatusServiceUnavailable, ""}, {http.StatusUnauthorized, "n2"},
			},
			want: []string{"", "n1", "n1"},
		},
		{
			name:  "the call begins with the nonce the server then repeats",
			steps: []step{{http.StatusOK, "n1"}, {http.StatusUnauthorized, "n1"}},
			want:  []string{"", "n1"},
		},
	}
	for _, ask := range nonceAskings {
		for _, tt := range tests {
			t.Run(ask.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				rt := &scripted{steps: tt.steps, ask: &ask}
				x := scriptedExchanger(rt)
				var err error
				for range 2 { // a call answered 200 first, if the script says so
					if _, err = x.Post(t.Context(), nonceCredential{}, "https://gw.example/decide", []byte(`{}`), nil, true, nil); err != nil {
						break
					}
				}
				require.ErrorIs(t, err, ErrProofRejected, "a nonce still owed blames the proof")
				require.NotErrorIs(t, err, ErrUnauthorized, "a valid token does not look refused")
				var re *ResponseError
				require.ErrorAs(t, err, &re)
				assert.Contains(t, re.Challenge+re.ErrorName, "use_dpop_nonce", "what the server said is kept")
				assert.Equal(t, tt.want, rt.sent)
			})
		}
	}
}

// TestWhichAnswerIsResentForANonce: a DPoP request is sent once more, with
// the nonce its answer carried, for a 401 or 400 that carries a DPoP-Nonce
// other than the one just used, whatever else it says (the use_dpop_nonce
// error in its challenge, in its body, or nowhere: a server that rotates
// its nonce on a refusal costs one request), unless the answer's one DPoP
// verdict refuses the token (invalid_token in any challenge or the body
// wins over a nonce request). A Bearer request is never resent. What the
// last answer says then decides the error: only an explicit verdict on the
// token (invalid_token, or a 401 with no DPoP error in its challenges or
// body) is ErrUnauthorized.
func TestWhichAnswerIsResentForANonce(t *testing.T) {
	cutBody := `{"error":"use_dpop_nonce","trace":"` + strings.Repeat("x", MaxBody) + `","error":"invalid_token"}`
	t.Parallel()
	const nonceBody = `{"error":"use_dpop_nonce","error_description":"nonce required"}`
	tests := []struct {
		name   string
		status int
		ask    asking
		nonce  string // the DPoP-Nonce of every answer but the resend's
		bearer bool
		// resent is whether the call was resent (and then granted, unless
		// then says otherwise); otherwise the call fails with err.
		resent bool
		err    error
		// then is the status of the resend's answer (200 when 0); with
		// one other than 2xx, the call fails with err. thenAsk is what
		// that answer says (the first's when nil).
		then    int
		thenAsk *asking
	}{
		{name: "401 asking in the challenge", status: 401, ask: askInChallenge, nonce: "n1", resent: true},
		{name: "401 asking in the body", status: 401, ask: askInBody, nonce: "n1", resent: true},
		{name: "401 asking in the body under a challenge without error", status: 401, ask: askInBodyUnderAlgs, nonce: "n1", resent: true},
		{name: "400 asking in the challenge", status: 400, ask: askInChallenge, nonce: "n1", resent: true},
		{name: "400 asking in the body, as RFC 9449 section 8 has it", status: 400, ask: askInBody, nonce: "n1", resent: true},
		{name: "401 refusing the proof with a new nonce", status: 401,
			ask: asking{challenge: `DPoP error="invalid_dpop_proof"`, body: `{}`}, nonce: "n1", resent: true},
		// a-fix14b F2: a 401 the blame reads as refusing the token is not
		// resent, new nonce or not (the resend's 503 replaced the refusal).
		{name: "401 saying nothing but a new nonce", status: 401, ask: asking{body: `{"error":"Unauthorized"}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "400 saying nothing but a new nonce", status: 400, ask: asking{body: `{"error":"Bad Request"}`}, nonce: "n1", resent: true},
		// a-fix14b F1: every top-level "error" member of the body counts,
		// by its exact name; the one refusing the token wins.
		{name: "401 whose body has duplicate errors, invalid_token first", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: `{"error":"invalid_token","error":"use_dpop_nonce"}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 whose body refuses the token, then says Error in another case", status: 401,
			ask: asking{body: `{"error":"invalid_token","Error":"invalid_dpop_proof"}`}, err: ErrUnauthorized},
		{name: "401 whose body says the server's own error, then ERROR asking a nonce", status: 401,
			ask: asking{body: `{"error":"Unauthorized","ERROR":"use_dpop_nonce"}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 refusing the token with a new nonce", status: 401,
			ask: asking{challenge: `DPoP algs="ES256", error="invalid_token"`, body: `{}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 refusing the token in the challenge, asking in the body", status: 401,
			ask: asking{challenge: `DPoP error="invalid_token"`, body: nonceBody}, nonce: "n1", err: ErrUnauthorized},
		// a-dpop14 F2: the resend reads the one verdict the error blames
		// with, from every challenge value and the body; the signal
		// refusing the token wins.
		{name: "401 asking in one challenge, refusing the token in a second", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, more: []string{`DPoP error="invalid_token"`}, body: `{}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 asking in the challenge, refusing the token in the body", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: `{"error":"invalid_token"}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 asking in one challenge, naming another error in a second", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, more: []string{`DPoP error="insufficient_scope"`}, body: `{}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 asking in the challenge under the server's own error name", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: `{"error":"Unauthorized"}`}, nonce: "n1", resent: true},
		// a-dpop15 F1: a body the client cannot read whole is unclear. One
		// naming invalid_token anywhere refuses the token and is not
		// resent; another may be resent once. The result keeps the more
		// severe reading (a-fix15 F4): an unclear 401, refusing the token,
		// is cleared only by a 2xx to the resend; an unclear 400 refuses
		// nothing and gives way to its resend's answer, a refusal of the
		// token included (it was dropped for the 400).
		{name: "401 asking in the challenge, refusing the token in the body after a raw tab", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: "{\"message\":\"a\tb\",\"error\":\"invalid_token\"}"}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 asking in the challenge, refusing the token in the body after a leading zero", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: `{"code":0401,"error":"invalid_token"}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 asking in the challenge, its body past MaxBody, resend granted", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: cutBody}, nonce: "n1", resent: true},
		{name: "401 asking in the challenge, its body past MaxBody, resend refused alike", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: cutBody}, nonce: "n1", resent: true, then: 401, err: ErrUnauthorized},
		{name: "401 asking in the challenge, its body past MaxBody, resend answered 503", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: cutBody}, nonce: "n1", resent: true, then: 503, err: ErrUnauthorized},
		{name: "400 with an unclear body, resend answered 503", status: 400,
			ask: asking{body: "{\"message\":\"a\tb\"}"}, nonce: "n1", resent: true, then: 503, err: ErrUnavailable},
		{name: "400 with an unclear body, resend refusing the token in a 401's challenge", status: 400,
			ask: asking{body: "{\"message\":\"nonce\trequired\"}"}, nonce: "n1", resent: true, then: 401,
			thenAsk: &asking{challenge: `DPoP algs="ES256", error="invalid_token"`, body: `{"error":"invalid_token"}`}, err: ErrUnauthorized},
		{name: "400 with an unclear body, resend refusing the token in a 403", status: 400,
			ask: asking{body: "{\"message\":\"nonce\trequired\"}"}, nonce: "n1", resent: true, then: 403,
			thenAsk: &asking{challenge: `DPoP error="invalid_token"`, body: `{"error":"invalid_token"}`}, err: ErrUnauthorized},
		{name: "400 with an unclear body, resend refusing the token in a 401 with no DPoP signal", status: 400,
			ask: asking{body: "{\"message\":\"nonce\trequired\"}"}, nonce: "n1", resent: true, then: 401,
			thenAsk: &asking{challenge: `DPoP realm="gw"`, body: `{"error":"Unauthorized"}`}, err: ErrUnauthorized},
		{name: "400 with a clear body, resend refusing the token", status: 400,
			ask: asking{body: `{"error":"Bad Request"}`}, nonce: "n1", resent: true, then: 401,
			thenAsk: &asking{challenge: `DPoP error="invalid_token"`, body: `{}`}, err: ErrUnauthorized},
		// a-fix15 F2: an unclear body is searched for invalid_token as a
		// JSON reader would see it too, its string escapes decoded.
		{name: "400 refusing the token, escaped, in the body after a raw tab", status: 400,
			ask: asking{challenge: `DPoP algs="ES256"`, body: "{\"message\":\"a\tb\",\"error\":\"invalid\\u005ftoken\"}"}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 asking in the challenge, refusing the token, escaped, after a raw tab", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: "{\"message\":\"a\tb\",\"error\":\"\\u0069nvalid_token\"}"}, nonce: "n1", err: ErrUnauthorized},
		// a-fix15 F1: a challenge split over several WWW-Authenticate
		// lines is read as the lines joined with ", ".
		{name: "401 asking in a challenge split over two lines", status: 401,
			ask: asking{challenge: `DPoP algs="ES256"`, more: []string{`error="use_dpop_nonce"`}, body: `{"error":"Unauthorized"}`}, nonce: "n1", resent: true},
		{name: "401 refusing the token in a challenge split over two lines, asking in the body", status: 401,
			ask: asking{challenge: `DPoP algs="ES256"`, more: []string{`error="invalid_request"`}, body: nonceBody}, nonce: "n1", err: ErrUnauthorized},
		// a-fix15 F3: a body the client could not finish reading is no
		// reading: not resent on it, and no verdict on the token unless
		// what came refuses it by itself; the call is unavailable.
		{name: "401 blaming the proof, its body cut", status: 401,
			ask: asking{challenge: `DPoP error="invalid_dpop_proof"`, body: `{"error":"invalid_dpop_proof","message":"the`, cut: true}, err: ErrUnavailable},
		{name: "401 saying nothing of DPoP, its body cut", status: 401,
			ask: asking{challenge: `DPoP realm="gw"`, body: `{"error":"Unauthor`, cut: true}, err: ErrUnavailable},
		{name: "401 asking in the challenge with a new nonce, its body cut", status: 401,
			ask: asking{challenge: `DPoP error="use_dpop_nonce"`, body: `{"err`, cut: true}, nonce: "n1", err: ErrUnavailable},
		{name: "400 with a new nonce, its body cut", status: 400,
			ask: asking{body: `{"message":"a`, cut: true}, nonce: "n1", err: ErrUnavailable},
		{name: "401 refusing the token in the challenge, its body cut", status: 401,
			ask: asking{challenge: `DPoP error="invalid_token"`, body: `{"err`, cut: true}, nonce: "n1", err: ErrUnauthorized},
		{name: "401 blaming the proof, refusing the token in what came of its body", status: 401,
			ask: asking{challenge: `DPoP error="invalid_dpop_proof"`, body: `{"error":"invalid_token","message":"the`, cut: true}, err: ErrUnauthorized},
		{name: "a Bearer request's 401, its body cut", status: 401, bearer: true,
			ask: asking{challenge: `Bearer realm="gw"`, body: `{"err`, cut: true}, err: ErrUnauthorized},
		{name: "400 with a clear body, resend answered 503", status: 400,
			ask: asking{body: `{"error":"Bad Request"}`}, nonce: "n1", resent: true, then: 503, err: ErrUnavailable},
		// a-dpop15 F3: a 400 naming invalid_token refuses the token: not
		// resent, and blamed alike.
		{name: "400 refusing the token in the challenge with a new nonce", status: 400,
			ask: asking{challenge: `DPoP error="invalid_token"`, body: `{"error":"Bad Request"}`}, nonce: "n1", err: ErrUnauthorized},
		{name: "400 refusing the token in the body with a new nonce", status: 400,
			ask: asking{challenge: `DPoP algs="ES256"`, body: `{"error":"invalid_token"}`}, nonce: "n1", err: ErrUnauthorized},
		// a-dpop15 F2: a nonce request the parse used to read as no DPoP
		// signal, a refusal of the token.
		{name: "401 asking in the challenge after an unquoted algs list", status: 401,
			ask: asking{challenge: `DPoP algs=ES256 PS256, error="use_dpop_nonce"`, body: `{"error":"Unauthorized"}`}, nonce: "n1", resent: true},
		{name: "401 asking in the challenge after an unquoted realm with a slash", status: 401,
			ask: asking{challenge: `DPoP realm=api.example.com/v1, error="use_dpop_nonce"`, body: `{"error":"Unauthorized"}`}, nonce: "n1", resent: true},
		{name: "401 asking in the challenge after an unquoted error_uri", status: 401,
			ask: asking{challenge: `DPoP error_uri=https://gw.example/errors, error="use_dpop_nonce"`, body: `{"error":"Unauthorized"}`}, nonce: "n1", resent: true},
		{name: "401 asking in a body behind a BOM", status: 401,
			ask: asking{challenge: `DPoP realm="gw"`, body: "\ufeff{\"error\":\"use_dpop_nonce\"}"}, nonce: "n1", resent: true},
		{name: "401 asking in the body without a nonce", status: 401, ask: askInBody, err: ErrProofRejected},
		{name: "401 refusing the proof in the body without a nonce", status: 401,
			ask: asking{body: `{"error":"invalid_dpop_proof"}`}, err: ErrProofRejected},
		{name: "401 saying nothing of DPoP, without a nonce", status: 401, ask: asking{body: `{"error":"Unauthorized"}`}, err: ErrUnauthorized},
		{name: "a Bearer request's 401 asking in the body", status: 401, ask: askInBody, nonce: "n1", bearer: true, err: ErrUnauthorized},
		{name: "a Bearer request's 401 asking in the challenge", status: 401, ask: askInChallenge, nonce: "n1", bearer: true, err: ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			then := cmp.Or(tt.then, http.StatusOK)
			rt := &scripted{steps: []step{{tt.status, tt.nonce}, {then, ""}}, ask: &tt.ask, later: tt.thenAsk}
			x := scriptedExchanger(rt)
			x.Retry.Max = 0
			var cred Credential = nonceCredential{}
			if tt.bearer {
				cred = NewBearer("a-token")
			}
			_, err := x.Post(t.Context(), cred, "https://gw.example/decide", []byte(`{}`), nil, true, nil)
			if tt.resent {
				assert.Equal(t, []string{"", tt.nonce}, rt.sent, "resent once, with the nonce the answer carried")
				switch {
				case then == http.StatusOK:
					require.NoError(t, err)
				default:
					require.ErrorIs(t, err, tt.err)
				}
				return
			}
			assert.Equal(t, []string{""}, rt.sent, "not resent")
			require.ErrorIs(t, err, tt.err)
			for _, other := range []error{ErrUnauthorized, ErrProofRejected} {
				if other != tt.err {
					assert.NotErrorIs(t, err, other)
				}
			}
		})
	}
}
