package transport

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
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
// ("" for none). A 401 with a nonce is a use_dpop_nonce challenge.
type step struct {
	status int
	nonce  string
}

// scripted answers the requests it receives with its steps in turn and
// records the nonce each request's proof carried.
type scripted struct {
	mu    sync.Mutex
	steps []step
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
	if st.status == http.StatusUnauthorized && st.nonce != "" {
		h.Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
	}
	return &http.Response{StatusCode: st.status, Header: h, Body: io.NopCloser(strings.NewReader(`{}`)),
		ContentLength: 2, Request: r}, nil
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

// TestNonceChallengeIsResentAtMostOnce: a use_dpop_nonce challenge is
// answered by sending the request once more with the new nonce, never
// for the nonce just refused, and at most once per call however many
// challenges its attempts (retries included) meet; the challenge that
// stands then fails the call as a refused proof, not a refused token.
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := &scripted{steps: tt.steps}
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
			assert.Contains(t, re.Challenge, "use_dpop_nonce")
			assert.Equal(t, tt.want, rt.sent)
		})
	}
}
