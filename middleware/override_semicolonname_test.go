package middleware_test

import (
	"errors"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
)

// TestFileNameWithSemicolonIsRead: Go's mime/multipart Writer, Chrome and
// Firefox send a file name holding ';' ("report;v2.pdf", legal on every
// OS) verbatim in quotes: the upload reaches the handler as sent, whole
// or a byte at a time.
func TestFileNameWithSemicolonIsRead(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"report;v2.pdf", "a; b.txt", "x;filename.txt"} {
		var b strings.Builder
		mw := multipart.NewWriter(&b)
		fw, err := mw.CreateFormFile("upload", name)
		require.NoError(t, err)
		_, _ = fw.Write([]byte("%PDF-1.4 ..."))
		require.NoError(t, mw.Close())
		body := b.String()
		require.Contains(t, body, `filename="`+name+`"`)
		for _, whole := range []bool{true, false} {
			read, err := readThrough(t, false, whole, mw.FormDataContentType(), body)
			require.NoError(t, err, "%q whole %v: the upload was refused", name, whole)
			require.Equal(t, body, string(read))
		}
	}
}

// TestQuotedSemicolonNameFailsTheRead: Rack 2 finds a part's name with the
// unanchored Content-Disposition:[^:]*;\s*name=, so a ';' inside a quoted
// value followed (after blanks) by "name", in any case, names the part for
// Rack otherwise than for every other stack: the read fails.
func TestQuotedSemicolonNameFailsTheRead(t *testing.T) {
	t.Parallel()
	for _, cd := range []string{
		`form-data; name="note"; filename="x;name=_method"`,
		`form-data; name="note"; filename="x; NAME=_method"`,
		`form-data; filename="x;	Name=_method"; name="note"`,
	} {
		body := "--Z\r\nContent-Disposition: " + cd + "\r\n\r\nDELETE\r\n--Z--\r\n"
		for _, whole := range []bool{true, false} {
			read, err := readThrough(t, false, whole, "multipart/form-data; boundary=Z", body)
			require.True(t, errors.Is(err, middleware.ErrFormMethodOverride), "%s whole %v: the handler read %q (err %v)", cd, whole, read, err)
		}
	}
}
