package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// readThrough serves a POST of body under contentType through a granting
// middleware (with _method trusted or not), whole or a byte at a time,
// to a handler that reads the body whole, and returns what the read
// returned.
func readThrough(t *testing.T, trusted, whole bool, contentType, body string) ([]byte, error) {
	t.Helper()
	guard := middleware.Require(&fakeChecker{res: result(pep.Grant, nil)}, "orders", "write")
	if trusted {
		guard = guard.With(middleware.WithMethodOverride("_method"))
	}
	var read []byte
	var err error
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read, err = io.ReadAll(r.Body)
	}))
	var in io.Reader = strings.NewReader(body)
	if !whole {
		in = iotest.OneByteReader(in)
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", in)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return read, err
}

// TestMultipartGuardRefusesEveryHeaderThatIsNotStrict: a multipart part
// header that not every stack reads alike fails the handler's read with
// ErrFormMethodOverride, whatever name it gives the part, trusted or not,
// whole or a byte at a time; so does a body whose Content-Type names its
// boundary in a way not every stack reads alike. Rack 2 looks for
// "Content-Disposition:", "; name=" and "Content-ID:" anywhere in a part
// header: none may appear but in the one Content-Disposition's own
// parameters. The same body with a strict header reaches the handler as
// sent.
func TestMultipartGuardRefusesEveryHeaderThatIsNotStrict(t *testing.T) {
	t.Parallel()
	const ct = "multipart/form-data; boundary=XyZ"
	part := func(head string) string { return "--XyZ\r\n" + head + "\r\n\r\nDELETE\r\n--XyZ--\r\n" }
	const cd = "Content-Disposition: form-data; name=note"
	refused := map[string]struct{ ct, body string }{
		"a vertical tab in another field":                   {ct, part(cd + "\r\nX-Note: a\vb")},
		"a form feed in the disposition":                    {ct, part("Content-Disposition: form-data;\fname=note")},
		"a NUL in the disposition":                          {ct, part("Content-Disposition: form-data; name=\"no\x00te\"")},
		"a bare CR in a field":                              {ct, part(cd + "\rX-Note: a")},
		"lines ending in LF":                                {ct, "--XyZ\n" + cd + "\n\nDELETE\n--XyZ--\n"},
		"a header line ending in LF":                        {ct, part(cd + "\nContent-Type: text/plain")},
		"a continuation line":                               {ct, part("Content-Disposition: form-data;\r\n name=note")},
		"a line without a colon":                            {ct, part(cd + "\r\n; name=x")},
		"a blank before the colon":                          {ct, part("Content-Disposition : form-data; name=note")},
		"two dispositions":                                  {ct, part(cd + "\r\n" + cd)},
		"no disposition":                                    {ct, part("Content-Type: text/plain")},
		"no header at all":                                  {ct, "--XyZ\r\n\r\nDELETE\r\n--XyZ--\r\n"},
		"a Content-ID":                                      {ct, part(cd + "\r\nContent-ID: note")},
		"a Content-ID in lower case":                        {ct, part("content-id: x\r\n" + cd)},
		"no name":                                           {ct, part("Content-Disposition: form-data; filename=a.txt")},
		"two names":                                         {ct, part("Content-Disposition: form-data; name=note; NAME=note")},
		"name* beside name":                                 {ct, part("Content-Disposition: form-data; name=note; name*=utf-8''note")},
		"a backslash in a quoted value":                     {ct, part(`Content-Disposition: form-data; x="a\\"; name=note`)},
		"a single-quoted name":                              {ct, part("Content-Disposition: form-data; name='note'")},
		"a parameter after a quoted value":                  {ct, part(`Content-Disposition: form-data; x="a" name=note`)},
		"blanks around '='":                                 {ct, part("Content-Disposition: form-data; name = note")},
		"Content-Disposition in another field's name":       {ct, part("X-Content-Disposition: form-data; name=_method\r\n" + cd)},
		"Content-ID in another field's name":                {ct, part(cd + "\r\nX-Content-Id: _method")},
		"Content-Disposition: in a value":                   {ct, part("X-Note: content-disposition: form-data; name=_method\r\n" + cd)},
		"Content-ID: in a value":                            {ct, part(cd + "\r\nX-Note: a Content-ID: _method")},
		"a ';' in a quoted value":                           {ct, part(`Content-Disposition: form-data; name=note; x="a;name=_method;b"`)},
		"a header cut by the end":                           {ct, "--XyZ\r\n" + cd},
		"text after the close delimiter":                    {ct, part(cd) + "epilogue\r\n"},
		"the boundary in content, then not a strict header": {ct, "--XyZ\r\n" + cd + "\r\n\r\nx --XyZx\r\nContent-ID: _method\r\n\r\n--XyZ--\r\n"},
		"the boundary named twice":                          {"multipart/form-data; boundary=XyZ; xboundary=abc", part(cd)},
		"the boundary name capitalised":                     {"multipart/form-data; Boundary=XyZ", part(cd)},
		"a blank before the boundary's '='":                 {"multipart/form-data; boundary =XyZ", part(cd)},
		"a ',' in the boundary":                             {`multipart/form-data; boundary="XyZ,a"`, "--XyZ,a\r\n" + cd + "\r\n\r\nx\r\n--XyZ,a--\r\n"},
		"a blank after the boundary":                        {"multipart/form-data; boundary=XyZ ; charset=utf-8", part(cd)},
	}
	for name, tc := range refused {
		for _, trusted := range []bool{false, true} {
			for _, whole := range []bool{true, false} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					_, err := readThrough(t, trusted, whole, tc.ct, tc.body)
					require.ErrorIs(t, err, middleware.ErrFormMethodOverride, "trusted %v, whole %v", trusted, whole)
				})
			}
		}
	}
	passed := map[string]string{
		"strict":                  part(cd),
		"quoted, with a filename": part(`Content-Disposition: form-data; name="note"; filename="a b.txt"` + "\r\nContent-Type: text/plain"),
		"no blanks":               part("Content-Disposition:form-data;name=note"),
		"a blank line after --":   part(cd) + "\r\n",
	}
	for name, body := range passed {
		for _, whole := range []bool{true, false} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				read, err := readThrough(t, false, whole, ct, body)
				require.NoError(t, err)
				assert.Equal(t, body, string(read))
			})
		}
	}
}

// TestJSONBodyStringReadAsMethodFailsTheRead: a JSON body (a Content-Type
// Laravel reads as JSON) holding a string, key or value, that is read as
// _method, escapes decoded, fails the handler's read, trusted or not,
// whole or a byte at a time; one holding none reaches it as sent.
func TestJSONBodyStringReadAsMethodFailsTheRead(t *testing.T) {
	t.Parallel()
	refused := []string{
		`{"_method":"DELETE"}`,
		`{"\u005fmethod":"DELETE"}`,
		`{"\u005F\u006D\u0065\u0074\u0068\u006F\u0064":"DELETE"}`,
		`{"_\method":"DELETE"}`,
		`{"_METHOD":"DELETE"}`,
		`{".method":"DELETE"}`,
		`{"_method[]":["DELETE"]}`,
		`{"order":{"note":"x"},"list":["_method"]}`,
		`{"note":"_method\u0000x"}`,
		`{"_method`,
	}
	for _, body := range refused {
		for _, ct := range []string{"application/json", "Application/Vnd.Api+JSON; charset=utf-8"} {
			for _, trusted := range []bool{false, true} {
				for _, whole := range []bool{true, false} {
					t.Run(ct+" "+body, func(t *testing.T) {
						t.Parallel()
						_, err := readThrough(t, trusted, whole, ct, body)
						require.ErrorIs(t, err, middleware.ErrFormMethodOverride, "trusted %v, whole %v", trusted, whole)
					})
				}
			}
		}
	}
	passed := []string{
		`{"payment_method":"card","method":"card","_methods":1,"x_method":2,"note":"\"_method\" \\ \u00e9 \ud83d\ude00"}`,
		`[1, true, null, -2.5e3, {"a": "b\/c\n"}]`,
		`"\u005fmethodx"`,
	}
	for _, body := range passed {
		for _, whole := range []bool{true, false} {
			t.Run(body, func(t *testing.T) {
				t.Parallel()
				read, err := readThrough(t, true, whole, "application/json", body)
				require.NoError(t, err)
				assert.Equal(t, body, string(read))
			})
		}
	}
}
