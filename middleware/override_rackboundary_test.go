package middleware_test

import (
	"errors"
	"io"
	"mime/multipart"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
)

// rackMultipartBoundary is Rack's (2.x and 3.x) boundary regex,
// Rack::Multipart::MULTIPART = %r|\Amultipart/.*boundary=\"?([^\";,]+)\"?|ni:
// its ".*" is greedy, so Rack takes the LAST "boundary=" in the value, in
// any case, even one inside a quoted boundary. Go's regexp has Perl's
// leftmost-first submatch semantics, so this port captures what Ruby
// captures.
var rackMultipartBoundary = regexp.MustCompile(`(?is)\Amultipart/.*boundary="?([^";,]+)"?`)

// TestSecondBoundaryEqualsFailsEveryRead: a Content-Type holding
// "boundary=" twice, in any case, even inside the quoted boundary, is read
// by net/http, PHP and the guard as the first and by Rack as the last: the
// guard would track delimiters Rack never sees, and a part Rack reads as
// _method would reach Rack::MethodOverride. Every read of such a body
// fails, trusted or not, whole or a byte at a time.
func TestSecondBoundaryEqualsFailsEveryRead(t *testing.T) {
	t.Parallel()
	body := "--Z\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--Z--\r\n"
	for _, ct := range []string{
		`multipart/form-data; boundary="a-boundary=Z"`,
		`multipart/form-data; boundary="a.BOUNDARY=Z"`,
		`multipart/form-data; boundary="a-Boundary=Z"`,
	} {
		// What Rack reads: boundary Z, and a part _method = DELETE.
		m := rackMultipartBoundary.FindStringSubmatch(ct)
		require.NotNil(t, m)
		require.Equal(t, "Z", m[1], "Rack's boundary")
		p, err := multipart.NewReader(strings.NewReader(body), m[1]).NextPart()
		require.NoError(t, err)
		require.Equal(t, "_method", p.FormName(), "the part Rack reads")
		v, _ := io.ReadAll(p)
		require.Equal(t, "DELETE", string(v))

		for _, trusted := range []bool{false, true} {
			for _, whole := range []bool{true, false} {
				t.Run(ct, func(t *testing.T) {
					t.Parallel()
					read, err := readThrough(t, trusted, whole, ct, body)
					require.True(t, errors.Is(err, middleware.ErrFormMethodOverride),
						"trusted %v whole %v: the handler read %q (err %v); Rack parses boundary %q and performs DELETE",
						trusted, whole, read, err, m[1])
				})
			}
		}
	}
}

// TestBoundaryHoldingBoundaryWithoutEqualsIsRead: a boundary holding
// "boundary" but no "boundary=" (as browsers send) is one Rack reads
// alike: the body reaches the handler as sent.
func TestBoundaryHoldingBoundaryWithoutEqualsIsRead(t *testing.T) {
	t.Parallel()
	const b = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
	body := "--" + b + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--" + b + "--\r\n"
	for _, ct := range []string{"multipart/form-data; boundary=" + b, `multipart/form-data; boundary="` + b + `"`} {
		require.Equal(t, b, rackMultipartBoundary.FindStringSubmatch(ct)[1])
		read, err := readThrough(t, false, true, ct, body)
		require.NoError(t, err, ct)
		require.Equal(t, body, string(read))
	}
}
