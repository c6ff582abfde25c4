package pep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	tests := []struct {
		name, text string
		withheld   bool
	}{
		{"verbatim", "you sent " + token, true},
		{"URL-escaped", "token=" + url.QueryEscape(token), true},
		{"path-escaped", url.PathEscape(token), true},
		{"JSON unicode escapes", strings.NewReplacer("+", `\u002B`, "/", `\u002f`).Replace(token), true},
		{"hex escapes", strings.NewReplacer("+", `\x2b`, "/", `\x2F`).Replace(token), true},
		{"upper-cased", strings.ToUpper(token), true},
		{"a partial echo", "bad token " + token[10:20] + "...", true},
		{"split by quoting", `"` + token[:9] + `" "` + token[9:18] + `"`, true},
		{"an honest message", "the resources array cannot be empty", false},
		{"a short fragment", "Zq8 and 3Rm9", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := redact(tt.text, token)
			if tt.withheld {
				assert.Equal(t, redactedText, got)
				return
			}
			assert.Equal(t, tt.text, got)
		})
	}
}

func TestRedactBoundsAndCleansText(t *testing.T) {
	t.Parallel()
	got := redact(strings.Repeat("é", 400)+"\x00\n\x7f", "unrelated-token-value")
	assert.LessOrEqual(t, len(got), maxErrorText+3)
	assert.True(t, strings.HasSuffix(got, "..."))
	assert.Equal(t, "a b", redact("a\nb", "unrelated-token-value"))
	assert.Equal(t, "x", redact("x\xff", "unrelated-token-value"), "invalid UTF-8 is dropped")
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
			err := unavailable(tt.err)
			assert.Equal(t, "pep: gateway unavailable: "+tt.kind, err.Error())
			require.ErrorIs(t, err, ErrUnavailable)
			assert.Equal(t, tt.deadline, errors.Is(err, context.DeadlineExceeded))
			for e := err; e != nil; e = errors.Unwrap(e) {
				assert.NotContains(t, e.Error(), secret, "nothing in the chain keeps the text")
			}
			assert.Same(t, err, unavailable(err), "a cause is not wrapped twice")
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
		``:      "",
		`DPoP`:  "",
		`,,, "`: "",
	}
	for header, want := range tests {
		assert.Equal(t, want, dpopChallengeError(header), header)
	}
}

// BenchmarkPurge purges a token of 10 entries from decision caches that
// hold ever more entries of other tokens: the cost must not grow with them
// (issue 11, break 3: a purge walked the whole cache under its lock).
func BenchmarkPurge(b *testing.B) {
	for _, others := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			d, err := newDecisionCache(others+10, 1<<40, time.Hour, time.Hour, nil)
			require.NoError(b, err)
			var ds []Decision
			for i := range 10 {
				ds = append(ds, Decision{Resource: "orders", Scope: fmt.Sprint("s", i), Status: Grant})
			}
			for i := range others {
				cl := &call{id: tokenIdent{scheme: schemeBearer, token: fmt.Sprint("other-token-", i%1000)}, ctxKey: noContext}
				w := d.writer(cl)
				d.store(w, cl, []Decision{{Resource: "orders", Scope: fmt.Sprint("s", i), Status: Grant}})
				w.Close()
			}
			victim := &call{id: tokenIdent{scheme: schemeBearer, token: "victim-token"}, ctxKey: noContext}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				w := d.writer(victim)
				d.store(w, victim, ds)
				w.Close()
				b.StartTimer()
				d.purge(victim.id)
			}
		})
	}
}
