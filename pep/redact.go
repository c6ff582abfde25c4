package pep

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
)

// Text that the gateway or the transport produced can hold the token (a
// gateway echoing the request, a malformed response quoted by net/http).
// Two rules keep it out of every error string and log line:
//
//   - gateway text reaches an error only through redact, which drops the
//     whole text when it holds any fragment of the token, in any encoding
//     that keeps the token's letters and digits (verbatim, URL- or
//     JSON-escaped, truncated, quoted);
//   - transport errors reach an error only as a fixed description of their
//     kind (transportError); their own text is never kept.

// fragmentLen is the shortest run of the token's letters and digits that
// counts as an echo of it. Eight alphanumerics of a token make a false match
// in a 512-byte text about once in ten million, and a false match only hides
// a message.
const fragmentLen = 8

// maxErrorText bounds each text field copied from a gateway answer.
const maxErrorText = 512

// redactedText replaces gateway text that held part of the token.
const redactedText = "[withheld: the gateway's text contained part of the token]"

// redact prepares text from the gateway for an error: withheld entirely when
// it holds a fragment of token, otherwise cut to maxErrorText bytes of valid
// UTF-8 without control characters.
func redact(text, token string) string {
	if text == "" {
		return ""
	}
	if echoes(text, token) {
		return redactedText
	}
	text = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, ""))
	if len(text) > maxErrorText {
		text = strings.ToValidUTF8(text[:maxErrorText], "") + "..."
	}
	return text
}

// echoes reports whether text holds a run of fragmentLen letters and digits
// of token (or the whole of a shorter token's), compared without case after
// undoing %XX and \uXXXX escapes and dropping every other character, so that
// no escaping or quoting hides an echo.
func echoes(text, token string) bool {
	t := alnumFold(token, false)
	if len(t) == 0 {
		return false
	}
	s := alnumFold(text, true)
	n := min(fragmentLen, len(t))
	if len(s) < n {
		return false
	}
	grams := make(map[string]struct{}, len(t)-n+1)
	for i := 0; i+n <= len(t); i++ {
		grams[t[i:i+n]] = struct{}{}
	}
	for i := 0; i+n <= len(s); i++ {
		if _, ok := grams[s[i:i+n]]; ok {
			return true
		}
	}
	return false
}

// alnumFold returns the ASCII letters (lower-cased) and digits of s. With
// unescape, %XX and \uXXXX sequences count as the character they encode
// (\xXX too), so that an escaped echo folds like the original.
func alnumFold(s string, unescape bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unescape {
			if v, n := escaped(s[i:]); n > 0 {
				c = v
				i += n - 1
			}
		}
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	return b.String()
}

// escaped decodes an escape at the start of s: %XX, \xXX or \u00XX. It
// returns the byte and the escape's length, or 0 when s starts with none.
func escaped(s string) (byte, int) {
	var digits string
	var n int
	switch {
	case len(s) >= 3 && s[0] == '%':
		digits, n = s[1:3], 3
	case len(s) >= 4 && s[0] == '\\' && s[1] == 'x':
		digits, n = s[2:4], 4
	case len(s) >= 6 && s[0] == '\\' && s[1] == 'u' && s[2] == '0' && s[3] == '0':
		digits, n = s[4:6], 6
	default:
		return 0, 0
	}
	v, err := strconv.ParseUint(digits, 16, 8)
	if err != nil {
		return 0, 0
	}
	return byte(v), n
}

// transportError is the Cause of a request that got no HTTP answer. Its
// text is a fixed description of the failure's kind; the underlying error,
// whose text can quote what the gateway sent, is not kept, except the
// context's own error so that errors.Is(err, context.DeadlineExceeded)
// works.
type transportError struct {
	kind string
	ctx  error // context.Canceled or context.DeadlineExceeded, else nil
}

func (e *transportError) Error() string {
	return "pep: gateway unavailable: " + e.kind
}

// Unwrap returns ErrUnavailable and, for a timeout or cancellation, the
// context error.
func (e *transportError) Unwrap() []error {
	if e.ctx != nil {
		return []error{ErrUnavailable, e.ctx}
	}
	return []error{ErrUnavailable}
}

// Timeout reports whether the request ran out of time, as net.Error does.
func (e *transportError) Timeout() bool { return errors.Is(e.ctx, context.DeadlineExceeded) }

// unavailable turns a transport or context failure into a fail-closed
// Cause that keeps none of err's text.
func unavailable(err error) error {
	var te *transportError
	if errors.As(err, &te) {
		return te
	}
	var (
		netErr    net.Error
		dnsErr    *net.DNSError
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		recordErr tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &transportError{kind: "the call's deadline passed", ctx: context.DeadlineExceeded}
	case errors.Is(err, context.Canceled):
		return &transportError{kind: "the call was cancelled", ctx: context.Canceled}
	case errors.As(err, &dnsErr):
		return &transportError{kind: "the gateway's host name did not resolve"}
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		return &transportError{kind: "the gateway's TLS certificate was not accepted"}
	case errors.As(err, &recordErr):
		return &transportError{kind: "the gateway did not speak TLS"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &transportError{kind: "the connection was refused"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return &transportError{kind: "the connection was reset"}
	case errors.As(err, &netErr) && netErr.Timeout():
		return &transportError{kind: "the request timed out", ctx: context.DeadlineExceeded}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &transportError{kind: "the connection closed before the answer was complete"}
	case strings.Contains(err.Error(), "malformed HTTP"):
		return &transportError{kind: "the gateway's answer was not valid HTTP"}
	case errors.Is(err, http.ErrSchemeMismatch):
		return &transportError{kind: "the gateway answered HTTP to an HTTPS request"}
	}
	return &transportError{kind: "the request failed"}
}
