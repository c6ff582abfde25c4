package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
)

// TestFileUploadOfEveryClientReachesTheHandler: a file part as the common
// clients write its Content-Disposition reaches the handler's
// ParseMultipartForm, behind the default guard and one trusting _method.
// The strictness of a part header applies to what names the part (name,
// name*); any other parameter is read as a whole token, quoted string or
// RFC 2231/5987 extended value. (a-client10b F2: every .NET HttpClient
// upload, which sends an extended filename* beside filename=, was refused.)
func TestFileUploadOfEveryClientReachesTheHandler(t *testing.T) {
	t.Parallel()
	upload := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, "parse: "+err.Error(), http.StatusBadRequest)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, "file: "+err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(f)
		_, _ = w.Write(b)
	})
	for _, tc := range []struct{ name, disposition string }{
		{"a browser", `form-data; name="file"; filename="report.txt"`},
		{"a browser, a non-ASCII name sent raw", "form-data; name=\"file\"; filename=\"r\u00e9sum\u00e9.pdf\""},
		{"a browser, an escaped quote", `form-data; name="file"; filename="say %22hi%22.txt"`},
		// MultipartFormDataContent.Add(content, name, fileName).
		{".NET", `form-data; name=file; filename=report.txt; filename*=utf-8''report.txt`},
		{".NET, a blank in the file name", `form-data; name=file; filename="my report.txt"; filename*=utf-8''my%20report.txt`},
		{".NET, a non-ASCII file name", `form-data; name=file; filename="=?utf-8?B?csOpc3Vtw6kucGRm?="; filename*=utf-8''r%C3%A9sum%C3%A9.pdf`},
		{"curl -F", `form-data; name="file"; filename="report.txt"`},
		{"OkHttp", `form-data; name="file"; filename="report.txt"`},
		{"Python requests (urllib3 2)", `form-data; name="file"; filename="report.txt"`},
		{"Python requests (urllib3 1, RFC 2231)", `form-data; name="file"; filename*=utf-8''r%C3%A9sum%C3%A9.pdf`},
		{"a language in the extended value", `form-data; name="file"; filename*=UTF-8'en'report.txt`},
	} {
		for trusted, opts := range [][]middleware.Option{nil, {middleware.WithMethodOverride("_method")}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				m := middleware.Require(&fakeChecker{grant: true}, "orders", "read").With(opts...)
				body := "--b0undary\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Disposition: " + tc.disposition +
					"\r\n\r\nhello\r\n--b0undary--\r\n"
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", strings.NewReader(body))
				req.Header.Set("Content-Type", `multipart/form-data; boundary="b0undary"`)
				req.Header.Set("Authorization", "Bearer abcdefghijklmnopqrstuvwxyz")
				rec := httptest.NewRecorder()
				m(upload).ServeHTTP(rec, req)
				assert.Equal(t, http.StatusOK, rec.Code, "trusted %v: %s", trusted == 1, rec.Body.String())
				assert.Equal(t, "hello", rec.Body.String())
			})
		}
	}
}

// TestExtendedParameterNeverLetsAPartNamedMethodThrough: an extended
// value is read whole only when it is one every stack ends where Go's
// mime does; a part named _method, or by name*, or with an extended value
// PHP's quotes or Rack's tokens could read otherwise, fails the handler's
// read with ErrFormMethodOverride, trusted or not.
func TestExtendedParameterNeverLetsAPartNamedMethodThrough(t *testing.T) {
	t.Parallel()
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if assert.ErrorIs(t, err, middleware.ErrFormMethodOverride) {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	for _, disposition := range []string{
		`form-data; name=_method; filename*=utf-8''report.txt`,
		`form-data; name="_method"; filename*=utf-8''report.txt`,
		`form-data; name*=utf-8''_method`,
		`form-data; name*=utf-8''file`,
		`form-data; name*0*=utf-8''_method`,
		`form-data; name=file; filename*=utf-8'x; name=_method`,
		`form-data; name=file; filename*=utf-8'en'a'b`,
		`form-data; name=file; filename*=utf-8'; name=_method; x='`,
		`form-data; name=file; filename*='x'; name=_method`,
		`form-data; name=file; filename*=utf-8''a%2`,
		`form-data; name=file; filename*=utf-8''a%zz`,
		`form-data; name=file; filename*=utf-8''a"b"`,
		`form-data; name=file; filename=it's.txt; x=a'; name=_method`,
	} {
		for trusted, opts := range [][]middleware.Option{nil, {middleware.WithMethodOverride("_method")}} {
			t.Run(disposition, func(t *testing.T) {
				t.Parallel()
				m := middleware.Require(&fakeChecker{grant: true}, "orders", "read").With(opts...)
				body := "--b0undary\r\nContent-Disposition: " + disposition + "\r\n\r\nDELETE\r\n--b0undary--\r\n"
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", strings.NewReader(body))
				req.Header.Set("Content-Type", `multipart/form-data; boundary=b0undary`)
				req.Header.Set("Authorization", "Bearer abcdefghijklmnopqrstuvwxyz")
				rec := httptest.NewRecorder()
				m(read).ServeHTTP(rec, req)
				require.Equal(t, http.StatusBadRequest, rec.Code, "trusted %v", trusted == 1)
			})
		}
	}
}
