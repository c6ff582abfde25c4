package transport

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	const token = "Zq8+Kd/v3Rm9xW2pL7tN4bY6cQ1hJ5sF0gE=="
	hexOf := func(s string) string { return fmt.Sprintf("%x", s) }
	entities := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, "&#%d;", r)
		}
		return b.String()
	}
	tests := []struct {
		name, text, token string
		withheld          bool
	}{
		{"verbatim", "you sent " + token, token, true},
		{"URL-escaped", "token=" + url.QueryEscape(token), token, true},
		{"escaped twice", "token=" + url.QueryEscape(url.QueryEscape(token)), token, true},
		{"path-escaped", url.PathEscape(token), token, true},
		{"JSON unicode escapes", strings.NewReplacer("+", `\u002B`, "/", `\u002f`).Replace(token), token, true},
		{"hex escapes", strings.NewReplacer("+", `\x2b`, "/", `\x2F`).Replace(token), token, true},
		{"upper-cased", strings.ToUpper(token), token, true},
		{"a partial echo", "bad token " + token[10:20] + "...", token, true},
		{"split by quoting", `"` + token[:9] + `" "` + token[9:18] + `"`, token, true},
		{"base64", "token " + base64.StdEncoding.EncodeToString([]byte(token)) + " refused", token, true},
		{"hex", "token " + hexOf(token), token, true},
		{"character entities", entities(token), token, true},
		{"a spaced hex dump", "bad header bytes: " + spaced(hexOf("Bearer "+token), 2), token, true},
		{"base64 in short lines", spaced(base64.StdEncoding.EncodeToString([]byte(token)), 16), token, true},
		{"decimal bytes", func() string {
			var b strings.Builder
			for i := 0; i < len(token); i++ {
				fmt.Fprintf(&b, "%d ", token[i])
			}
			return b.String()
		}(), token, true},
		{"escapes broken by invalid UTF-8", strings.Join(strings.Split(url.PathEscape(token), "%"), "%\xff"), token, true},
		{"every byte escaped, broken by invalid UTF-8", func() string {
			var b strings.Builder
			for i := 0; i < len(token); i++ {
				h := fmt.Sprintf("%02X", token[i])
				b.WriteString("%" + h[:1] + "\xff" + h[1:] + " ")
			}
			return b.String()
		}(), token, true},
		{"a fragment with few letters", "got Zq-9_x.Kp-W_ there", "aaZq-9_x.Kp-W_bb-cc_dd", true},
		{"a token of escapes, verbatim", "got %41%42%43%44 here", "%41%42%43%44", true},
		{"a token of symbols, verbatim", "got !#$&*+-.^_`|~ here", "!#$&*+-.^_`|~", true},
		{"an honest message", "the resources array cannot be empty", token, false},
		{"an honest message with a number", "at most 100 resources of 50 scopes each", token, false},
		{"an honest challenge", `DPoP algs="ES256 EdDSA", error="invalid_dpop_proof", error_description="iat is in the future"`, token, false},
		{"a short fragment", "Zq8 and 3Rm9", token, false},
		{"empty", "", token, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Redact(tt.text, tt.token)
			if tt.withheld {
				assert.Equal(t, redactedText, got)
				return
			}
			assert.Equal(t, tt.text, got)
		})
	}
}

// spaced cuts s into pieces of n bytes separated by spaces.
func spaced(s string, n int) string {
	var pieces []string
	for len(s) > n {
		pieces, s = append(pieces, s[:n]), s[n:]
	}
	return strings.Join(append(pieces, s), " ")
}

// TestRedactReadsWhatItCouldShow: Redact examines only the part of a text
// it could show, so that a megabyte of nested escapes costs what a short
// text does; a token echoed past that part is never shown either.
func TestRedactReadsWhatItCouldShow(t *testing.T) {
	t.Parallel()
	const token = "Zq8+Kd/v3Rm9xW2pL7tN4bY6cQ1hJ5sF0gE=="
	prefix := strings.Repeat("the gateway says no ", maxScannedText/20+1)
	got := Redact(prefix+token+strings.Repeat(" %25252541", 1<<16), token)
	assert.True(t, strings.HasPrefix(got, "the gateway says no"), "the shown part is kept: %.60s", got)
	assert.NotContains(t, got, token[:fragmentLen])
	assert.LessOrEqual(t, len(got), maxErrorText+3)
	assert.Equal(t, redactedText, Redact("x "+token+strings.Repeat(" y", 1<<20), token),
		"an echo in the shown part withholds it")
}

func TestRedactBoundsAndCleansText(t *testing.T) {
	t.Parallel()
	got := Redact(strings.Repeat("déjà vu ", 100), "unrelated-token-value")
	assert.LessOrEqual(t, len(got), maxErrorText+3)
	assert.True(t, strings.HasSuffix(got, "..."))
	assert.Equal(t, "a b c", Redact("a\nb\t\tc  ", "unrelated-token-value"))
}

func TestUnavailableKeepsNoText(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token-in-the-transport-error"
	tests := []struct {
		name     string
		err      error
		kind     string
		deadline bool
	}{
		{"deadline", fmt.Errorf("Post %q: %w", secret, context.DeadlineExceeded), "the call's deadline passed", true},
		{"cancelled", fmt.Errorf("%s: %w", secret, context.Canceled), "the call was cancelled", false},
		{"refused", &net.OpError{Op: "dial", Err: fmt.Errorf("%s: %w", secret, syscall.ECONNREFUSED)}, "the connection was refused", false},
		{"reset", fmt.Errorf("%s: %w", secret, syscall.ECONNRESET), "the connection was reset", false},
		{"eof", fmt.Errorf("%s: %w", secret, io.ErrUnexpectedEOF), "the connection closed before the answer was complete", false},
		{"malformed", errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP response "` + secret + `"`), "the gateway's answer was not valid HTTP", false},
		{"dns", &net.DNSError{Err: secret, Name: "gw"}, "the gateway's host name did not resolve", false},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, "the request timed out", true},
		{"other", errors.New(secret), "the request failed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Peer("").Unavailable(tt.err)
			assert.Equal(t, "pep: gateway unavailable: "+tt.kind, err.Error())
			require.ErrorIs(t, err, ErrUnavailable)
			assert.Equal(t, tt.deadline, errors.Is(err, context.DeadlineExceeded))
			for e := err; e != nil; e = errors.Unwrap(e) {
				assert.NotContains(t, e.Error(), secret, "nothing in the chain keeps the text")
			}
			assert.Same(t, err, Peer("").Unavailable(err), "a cause is not wrapped twice")
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestDPoPChallengeError(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`DPoP error="use_dpop_nonce"`:                                              "use_dpop_nonce",
		`dpop error=use_dpop_nonce`:                                                "use_dpop_nonce",
		`Bearer realm="x", DPoP algs="ES256", error="invalid_dpop_proof"`:          "invalid_dpop_proof",
		`Bearer error="use_dpop_nonce", DPoP algs="ES256"`:                         "",
		`DPoP error_description="error=\"use_dpop_nonce\"", error="invalid_token"`: "invalid_token",
		`Bearer abc==, DPoP error="invalid_dpop_proof"`:                            "invalid_dpop_proof",
		`Basic realm="a, DPoP error=use_dpop_nonce"`:                               "",
		// a-dpop15 F2: a new scheme only where a challenge can begin; an
		// unreadable parameter is skipped to the next comma.
		`DPoP algs=ES256 PS256, error="use_dpop_nonce"`:                          "use_dpop_nonce",
		`DPoP realm=api.example.com/v1, error="use_dpop_nonce"`:                  "use_dpop_nonce",
		`DPoP error_uri=https://gw.example/e, error="invalid_dpop_proof"`:        "invalid_dpop_proof",
		`Negotiate YII+/==, DPoP error="invalid_dpop_proof"`:                     "invalid_dpop_proof",
		`DPoP error=use dpop nonce`:                                              "",
		`DPoP error="use_dpop_nonce`:                                             "",
		`Bearer realm="x" DPoP error="use_dpop_nonce"`:                           "",
		`Bearer realm=x/y DPoP error="use_dpop_nonce", DPoP error=invalid_token`: "invalid_token",
		``:      "",
		`DPoP`:  "",
		`,,, "`: "",
	}
	for header, want := range tests {
		assert.Equal(t, want, DPoPChallengeError(header), header)
	}
	// a-fix15 F1: a field split over several lines (RFC 9110 section 5.3)
	// reads as the lines joined with ", " (Challenges), as one line would.
	for lines, want := range map[[3]string]string{
		{`DPoP algs="ES256"`, `error="use_dpop_nonce"`}:                        "use_dpop_nonce",
		{`DPoP realm="gw"`, `algs="ES256"`, `error="invalid_dpop_proof"`}:      "invalid_dpop_proof",
		{`Bearer realm="gw"`, `error="invalid_token"`, `DPoP algs="ES256"`}:    "",
		{`Bearer realm="gw"`, `DPoP algs="ES256"`, `error="invalid_token"`}:    "invalid_token",
		{`DPoP error_description="a, b"`, `error=use_dpop_nonce`, `Basic a=b`}: "use_dpop_nonce",
	} {
		h := http.Header{}
		for _, l := range lines {
			if l != "" {
				h.Add("WWW-Authenticate", l)
			}
		}
		assert.Equal(t, want, DPoPChallengeError(Challenges(h)), "%q", lines)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{"0", 0, true},
		{"99999999999999999999999", math.MaxInt64, true}, // longer than any wait: ends the retries
		{"9223372036854775807", math.MaxInt64, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{now.Add(2 * time.Second).Format(http.TimeFormat), 2 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

// TestRedactFragmentRule pins the documented rule: a text holding 8
// consecutive characters of the token, as they are or escaped, or 8
// consecutive letters and digits of it in any case, is withheld; one
// holding 7 is shown. The texts hold nothing else a fragment could join.
func TestRedactFragmentRule(t *testing.T) {
	t.Parallel()
	const (
		token = "Zq8+Kd/v3Rm9xW2pL7tN4bY6cQ1hJ5sF0gE=="
		// alnum is its letters and digits, lower-cased.
		alnum = "zq8kdv3rm9xw2pl7tn4by6cq1hj5sf0ge"
	)
	for i := 0; i+8 <= len(token); i++ {
		seven, eight := token[i:i+7], token[i:i+8]
		assert.Equal(t, `"`+seven+`"`, Redact(`"`+seven+`"`, token), "7 characters at %d are shown", i)
		assert.Equal(t, redactedText, Redact(`"`+eight+`"`, token), "8 characters at %d", i)
		assert.Equal(t, redactedText, Redact(`"`+url.QueryEscape(eight)+`"`, token), "8 characters at %d, escaped", i)
	}
	for i := 0; i+8 <= len(alnum); i++ {
		seven, eight := alnum[i:i+7], alnum[i:i+8]
		assert.Equal(t, `"`+strings.ToUpper(seven)+`"`, Redact(`"`+strings.ToUpper(seven)+`"`, token), "7 letters and digits at %d are shown", i)
		assert.Equal(t, redactedText, Redact(`"`+strings.ToUpper(eight)+`"`, token), "8 letters and digits at %d, in another case", i)
		assert.Equal(t, redactedText, Redact(`"`+eight[:3]+`" "`+eight[3:]+`"`, token), "8 letters and digits at %d, cut in two", i)
	}
	// A token shorter than 8 characters is withheld whole, and only whole.
	assert.Equal(t, redactedText, Redact("got ab-12", "ab-12"))
	assert.Equal(t, "got ab-1", Redact("got ab-1", "ab-12"))
}
