package middleware_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/pep"
)

// TestJSONBodyMustBeIdentityEncodedUTF8: the JSON guard reads the bytes
// sent, as UTF-8. Express's body-parser json() inflates gzip and decodes
// any "utf-" charset before method-override reads req.body._method, so a
// JSON body with a Content-Encoding, or a charset other than utf-8 (in any
// case), is refused with 415 before the handler runs, as a form body with
// a Content-Encoding is; utf-8 in any case, or no charset, streams as
// sent.
func TestJSONBodyMustBeIdentityEncodedUTF8(t *testing.T) {
	t.Parallel()
	doc := `{"_method":"DELETE"}`
	utf16 := make([]byte, 0, 2*len(doc))
	for i := 0; i < len(doc); i++ {
		utf16 = append(utf16, doc[i], 0)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(doc))
	require.NoError(t, zw.Close())
	const plain = `{"note":"hi"}`
	cases := []struct {
		name, ct, encoding string
		body               []byte
		refused            bool
	}{
		{"utf-16le", "application/json; charset=utf-16le", "", utf16, true},
		{"quoted utf-16", `application/json; Charset="UTF-16"`, "", utf16, true},
		{"latin1", "application/json;charset=iso-8859-1", "", []byte(plain), true},
		{"gzip", "application/json", "gzip", gz.Bytes(), true},
		{"gzip vendor json", "application/vnd.api+json", "gzip", gz.Bytes(), true},
		{"utf-8", "application/json; charset=UTF-8", "", []byte(plain), false},
		{"no charset", "application/json", "", []byte(plain), false},
		{"identity", "application/json", "identity", []byte(plain), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			guard := middleware.Require(&fakeChecker{res: result(pep.Grant, nil)}, "orders", "write")
			var read []byte
			var readErr error
			reached := false
			h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				read, readErr = io.ReadAll(r.Body)
			}))
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", bytes.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Set("Content-Type", tc.ct)
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tc.refused {
				require.False(t, reached, "the handler ran")
				require.Equal(t, http.StatusUnsupportedMediaType, rec.Code)
				require.Contains(t, rec.Body.String(), "JSON")
				return
			}
			require.True(t, reached, rec.Body.String())
			require.NoError(t, readErr)
			require.Equal(t, tc.body, read)
		})
	}
}
