package middleware_test

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/middleware"
)

// readCase is a request through a granting middleware to a handler that
// reads its body, raw or as net/http parses a form, and what the handler
// may read: the body as sent, nothing (every read fails with
// ErrFormMethodOverride and no form holds _method), or no call at all (a
// status before the handler).
type readCase struct {
	name, method, ct, body string
	headers                map[string]string // set as spelt
	trust                  int               // both (0), untrusted or trusted: whether _method is trusted
	refused                bool              // every read fails
	status                 int               // refused before the handler with this status
	says                   string            // words the refusal's message holds
	either                 bool              // refused with 400 before the handler, or every read fails
	text                   string            // the field "text" of the form as parsed, if any
}

const (
	untrusted = 1 + iota
	trusted
)

// b0 is the boundary of the bodies whose r.ParseMultipartForm must fail
// with ErrFormMethodOverride (TestMultipartFormMethodOverrideIsNeverRead).
const b0 = "b0undary"

// part is a multipart body under boundary XyZ of one part with head as
// its header, whose content is DELETE.
func part(head string) string { return "--XyZ\r\n" + head + "\r\n\r\nDELETE\r\n--XyZ--\r\n" }

// rackMultipartBoundary is Rack's (2.x and 3.x) boundary regex,
// Rack::Multipart::MULTIPART = %r|\Amultipart/.*boundary=\"?([^\";,]+)\"?|ni:
// its ".*" is greedy, so Rack takes the LAST "boundary=" in the value, in
// any case, even one inside a quoted boundary. Go's regexp has Perl's
// leftmost-first submatch semantics, so this port captures what Ruby
// captures.
var rackMultipartBoundary = regexp.MustCompile(`(?is)\Amultipart/.*boundary="?([^";,]+)"?`)

// TestBodyGuardsLetNoHandlerReadAMethod: a POST body the middleware does
// not check before the decision streams to the handler, and whatever
// names a method in it, however spelt, fails the handler's read (raw, or
// r.ParseForm and r.ParseMultipartForm, which leave r.FormValue("_method")
// empty, so a stack like gorilla's performs the POST checked), whole, a
// byte at a time or in halves, with _method trusted or not; a body that
// names none reaches the handler as sent. One the guards cannot read as
// sent (a Content-Encoding, a charset other than utf-8, a guarded header
// spelt with '_' or '.') is refused before the handler, saying why. The
// groups are the regression tests of the attack rounds, by name.
func TestBodyGuardsLetNoHandlerReadAMethod(t *testing.T) {
	t.Parallel()
	const cd = "Content-Disposition: form-data; name=note"
	const mpXyZ = "multipart/form-data; boundary=XyZ"
	mpB0 := func(header string) string {
		return "--" + b0 + "\r\n" + header + "\r\n\r\nDELETE\r\n--" + b0 + "--\r\n"
	}
	const webkit = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
	webkitBody := "--" + webkit + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n--" + webkit + "--\r\n"
	doc := `{"_method":"DELETE"}`
	var utf16 []byte
	for i := range len(doc) {
		utf16 = append(utf16, doc[i], 0)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(doc))
	require.NoError(t, zw.Close())
	const plainJSON = `{"note":"hi"}`
	hookCT, hookBody := multipartBody(t, "text", "a+b c%20d", "token", "xoxb")
	goCT, goBody := multipartBody(t, "qty", "1", "payment_method", "card", "note", "_method")
	browserBody := "--" + webkit + "\r\n" +
		"Content-Disposition: form-data; name=\"qty\"\r\n\r\n1\r\n" +
		"--" + webkit + "\r\n" +
		"Content-Disposition: form-data; name=\"receipt\"; filename=\"Dan's r\u00e9c\u00e9piss\u00e9 (1).pdf\"\r\n" +
		"Content-Type: application/pdf\r\n\r\n%PDF-1.7\r\n--x\r\nnot: a header\r\n\r\n" +
		"--" + webkit + "--\r\n"
	groups := map[string][]readCase{
		// A multipart part header that not every stack reads alike, or a
		// boundary named in a way not every stack reads alike: Rack 2 looks
		// for "Content-Disposition:", "; name=" and "Content-ID:" anywhere
		// in a part header.
		"TestMultipartGuardRefusesEveryHeaderThatIsNotStrict": {
			{name: "a vertical tab in another field", ct: mpXyZ, body: part(cd + "\r\nX-Note: a\vb"), refused: true},
			{name: "a form feed in the disposition", ct: mpXyZ, body: part("Content-Disposition: form-data;\fname=note"), refused: true},
			{name: "a NUL in the disposition", ct: mpXyZ, body: part("Content-Disposition: form-data; name=\"no\x00te\""), refused: true},
			{name: "a bare CR in a field", ct: mpXyZ, body: part(cd + "\rX-Note: a"), refused: true},
			{name: "lines ending in LF", ct: mpXyZ, body: "--XyZ\n" + cd + "\n\nDELETE\n--XyZ--\n", refused: true},
			{name: "a header line ending in LF", ct: mpXyZ, body: part(cd + "\nContent-Type: text/plain"), refused: true},
			{name: "a continuation line", ct: mpXyZ, body: part("Content-Disposition: form-data;\r\n name=note"), refused: true},
			{name: "a line without a colon", ct: mpXyZ, body: part(cd + "\r\n; name=x"), refused: true},
			{name: "a blank before the colon", ct: mpXyZ, body: part("Content-Disposition : form-data; name=note"), refused: true},
			{name: "two dispositions", ct: mpXyZ, body: part(cd + "\r\n" + cd), refused: true},
			{name: "no disposition", ct: mpXyZ, body: part("Content-Type: text/plain"), refused: true},
			{name: "no header at all", ct: mpXyZ, body: "--XyZ\r\n\r\nDELETE\r\n--XyZ--\r\n", refused: true},
			{name: "a Content-ID", ct: mpXyZ, body: part(cd + "\r\nContent-ID: note"), refused: true},
			{name: "a Content-ID in lower case", ct: mpXyZ, body: part("content-id: x\r\n" + cd), refused: true},
			{name: "no name", ct: mpXyZ, body: part("Content-Disposition: form-data; filename=a.txt"), refused: true},
			{name: "two names", ct: mpXyZ, body: part("Content-Disposition: form-data; name=note; NAME=note"), refused: true},
			{name: "name* beside name", ct: mpXyZ, body: part("Content-Disposition: form-data; name=note; name*=utf-8''note"), refused: true},
			{name: "a backslash in a quoted value", ct: mpXyZ, body: part(`Content-Disposition: form-data; x="a\\"; name=note`), refused: true},
			{name: "a single-quoted name", ct: mpXyZ, body: part("Content-Disposition: form-data; name='note'"), refused: true},
			{name: "a parameter after a quoted value", ct: mpXyZ, body: part(`Content-Disposition: form-data; x="a" name=note`), refused: true},
			{name: "blanks around '='", ct: mpXyZ, body: part("Content-Disposition: form-data; name = note"), refused: true},
			{name: "Content-Disposition in another field's name", ct: mpXyZ, body: part("X-Content-Disposition: form-data; name=_method\r\n" + cd), refused: true},
			{name: "Content-ID in another field's name", ct: mpXyZ, body: part(cd + "\r\nX-Content-Id: _method"), refused: true},
			{name: "Content-Disposition: in a value", ct: mpXyZ, body: part("X-Note: content-disposition: form-data; name=_method\r\n" + cd), refused: true},
			{name: "Content-ID: in a value", ct: mpXyZ, body: part(cd + "\r\nX-Note: a Content-ID: _method"), refused: true},
			{name: "a ';' in a quoted value", ct: mpXyZ, body: part(`Content-Disposition: form-data; name=note; x="a;name=_method;b"`), refused: true},
			{name: "a header cut by the end", ct: mpXyZ, body: "--XyZ\r\n" + cd, refused: true},
			{name: "text after the close delimiter", ct: mpXyZ, body: part(cd) + "epilogue\r\n", refused: true},
			{name: "the boundary in content, then not a strict header", ct: mpXyZ, body: "--XyZ\r\n" + cd + "\r\n\r\nx --XyZx\r\nContent-ID: _method\r\n\r\n--XyZ--\r\n", refused: true},
			{name: "the boundary named twice", ct: "multipart/form-data; boundary=XyZ; xboundary=abc", body: part(cd), refused: true},
			{name: "the boundary name capitalised", ct: "multipart/form-data; Boundary=XyZ", body: part(cd), refused: true},
			{name: "a blank before the boundary's '='", ct: "multipart/form-data; boundary =XyZ", body: part(cd), refused: true},
			{name: "a ',' in the boundary", ct: `multipart/form-data; boundary="XyZ,a"`, body: "--XyZ,a\r\n" + cd + "\r\n\r\nx\r\n--XyZ,a--\r\n", refused: true},
			{name: "a blank after the boundary", ct: "multipart/form-data; boundary=XyZ ; charset=utf-8", body: part(cd), refused: true},
			{name: "strict", ct: mpXyZ, body: part(cd)},
			{name: "quoted, with a filename", ct: mpXyZ, body: part(`Content-Disposition: form-data; name="note"; filename="a b.txt"` + "\r\nContent-Type: text/plain")},
			{name: "no blanks", ct: mpXyZ, body: part("Content-Disposition:form-data;name=note")},
			{name: "a blank line after --", ct: mpXyZ, body: part(cd) + "\r\n"},
		},
		// A Content-Type holding "boundary=" twice, in any case, even inside
		// the quoted boundary, is read by net/http, PHP and the guard as the
		// first and by Rack as the last (checked below); one holding
		// "boundary" without "=" (as browsers send) is read alike.
		"TestSecondBoundaryEqualsFailsEveryRead": {
			{name: "dash", ct: `multipart/form-data; boundary="a-boundary=Z"`, body: "--Z\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--Z--\r\n", refused: true},
			{name: "dot, upper case", ct: `multipart/form-data; boundary="a.BOUNDARY=Z"`, body: "--Z\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--Z--\r\n", refused: true},
			{name: "capitalised", ct: `multipart/form-data; boundary="a-Boundary=Z"`, body: "--Z\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--Z--\r\n", refused: true},
			{name: "browser boundary", ct: "multipart/form-data; boundary=" + webkit, body: webkitBody},
			{name: "browser boundary, quoted", ct: `multipart/form-data; boundary="` + webkit + `"`, body: webkitBody},
		},
		// Go's Writer, Chrome and Firefox send a file name holding ';'
		// verbatim in quotes; Rack 2 finds a part's name with the unanchored
		// Content-Disposition:[^:]*;\s*name=, so a ';' followed by "name" in
		// a quoted value names the part for Rack otherwise.
		"TestFileNameWithSemicolonIsRead": {
			{name: "report;v2.pdf", ct: mpXyZ, body: upload(t, "report;v2.pdf")},
			{name: "a; b.txt", ct: mpXyZ, body: upload(t, "a; b.txt")},
			{name: "x;filename.txt", ct: mpXyZ, body: upload(t, "x;filename.txt")},
			{name: "a quoted ';name='", ct: mpXyZ, body: part(`Content-Disposition: form-data; name="note"; filename="x;name=_method"`), refused: true},
			{name: "a quoted '; NAME='", ct: mpXyZ, body: part(`Content-Disposition: form-data; name="note"; filename="x; NAME=_method"`), refused: true},
			{name: "a quoted ';<tab>Name=' first", ct: mpXyZ, body: part(`Content-Disposition: form-data; filename="x;	Name=_method"; name="note"`), refused: true},
		},
		// However a multipart part named _method is spelt (each body is one
		// mime/multipart reads a _method value from, checked below), and
		// however a urlencoded key _method is (one url.ParseQuery reads as
		// _method, or a lookalike another parser could take for it), no
		// handler reads it; a body without one reaches it byte for byte.
		"TestMultipartFormMethodOverrideIsNeverRead": {
			{name: "quoted", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`Content-Disposition: form-data; name="_method"`), refused: true},
			{name: "a token", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`Content-Disposition: form-data; name=_method`), refused: true},
			{name: "lower case", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`content-disposition: form-data; name="_method"`), refused: true},
			{name: "upper case", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`CONTENT-DISPOSITION: FORM-DATA; NAME="_method"`), refused: true},
			{name: "no blanks", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`Content-Disposition:form-data;name=_method`), refused: true},
			{name: "RFC 2231", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`Content-Disposition: form-data; name*=UTF-8''%5Fmethod`), refused: true},
			{name: "RFC 2231 sections", ct: "multipart/form-data; boundary=" + b0, body: mpB0(`Content-Disposition: form-data; name*0="_me"; name*1="thod"`), refused: true},
			{name: "folded", ct: "multipart/form-data; boundary=" + b0, body: mpB0("Content-Disposition: form-data;\r\n name=\"_method\""), refused: true},
			{name: "folded twice", ct: "multipart/form-data; boundary=" + b0, body: mpB0("Content-Disposition:\r\n\tform-data;\r\n  name=\"_method\""), refused: true},
			{name: "after a header", ct: "multipart/form-data; boundary=" + b0, body: mpB0("Content-Type: text/plain\r\nContent-Disposition: form-data; name=\"_method\""), refused: true},
			{name: "after a preamble", ct: "multipart/form-data; boundary=" + b0, body: "preamble\r\n" + mpB0(`Content-Disposition: form-data; name="_method"`), refused: true},
			{name: "after a part", ct: "multipart/form-data; boundary=" + b0, body: "--" + b0 + "\r\nContent-Disposition: form-data; name=\"qty\"\r\n\r\n1\r\n" + mpB0(`Content-Disposition: form-data; name="_method"`), refused: true},
			{name: "bare line feeds", ct: "multipart/form-data; boundary=" + b0, body: "--" + b0 + "\nContent-Disposition: form-data; name=\"_method\"\n\nDELETE\n--" + b0 + "--\n", refused: true},
		},
		"TestUrlencodedFormMethodOverrideIsNeverRead": urlencodedRows(
			[]string{"_method=DELETE", "qty=1&_method=DELETE", "_method=DELETE&qty=1", "%5Fmethod=DELETE",
				"%5f%6D%65%74%68%6f%64=DELETE", "_METHOD=DELETE", "_MeThOd=DELETE", "qty=1;_method=DELETE",
				"_method=DELETE;qty=1", "_method=DELETE%zz", "qty=1&_method", "_method&qty=1", "_method;qty=1",
				"_method=", "qty=" + strings.Repeat("x", 5000) + "&_method=DELETE"},
			[]string{"qty=1", "note=_method", "note=_method%3DDELETE", "a=1%26_method%3DDELETE", "_methods=DELETE",
				"x_method=DELETE", "_metho=DELETE&d=1", "%5Fmethod%5F=DELETE", strings.Repeat("%5F", 8) + "method=DELETE",
				"", "=_method", "qty=1&&", "note=a+b;c"}),
		// A part's Content-Disposition that mime.ParseMediaType refuses but a
		// more lenient parser reads as naming _method.
		"TestMultipartGuardRefusesEveryPartNameAStackReadsAsMethod": {
			{name: "a repeated name parameter", ct: mpXyZ, body: part(`Content-Disposition: form-data; name=".method"; name="x"`), refused: true},
			{name: "name beside a name* (PHP)", ct: mpXyZ, body: part(`Content-Disposition: form-data; name="_method"; name*=utf-8''x`), refused: true},
			{name: "name* beside a name (Go)", ct: mpXyZ, body: part(`Content-Disposition: form-data; name="x"; NAME*=utf-8''%5Fmethod`), refused: true},
			{name: "a token name, blanks around", ct: mpXyZ, body: part("Content-Disposition: form-data ;  name = _method"), refused: true},
		},
		// A form whose keys no stack reads as _method, a multipart upload as
		// browsers and mime/multipart's Writer send it (files with a
		// Content-Type, names as UTF-8), a JSON body with no string read as
		// _method, and a body whose Content-Type no stack takes for a form
		// or JSON, whatever it holds.
		"TestOverrideGuardPassesWhatNoStackReadsAsMethod": {
			{name: "Go's Writer", ct: goCT, body: goBody, trust: untrusted},
			{name: "a browser", ct: "multipart/form-data; boundary=" + webkit, body: browserBody, trust: untrusted},
			{name: "a browser, quoted", ct: `multipart/form-data; boundary="` + webkit + `"`, body: browserBody, trust: untrusted},
			{name: "a browser, a charset", ct: "multipart/form-data; boundary=" + webkit + "; charset=utf-8", body: browserBody, trust: untrusted},
			{name: "keys like _method", ct: urlencoded, body: "qty=1&method=card&payment_method=card&_methods=2&x_method=1&order[_method]=a&_method_=b&x=_method", trust: untrusted},
			{name: "_method in values", ct: urlencoded, body: "note=" + url.QueryEscape(".method [_method] _method") + "&%5Bx%5D=1", trust: untrusted},
			{name: "JSON keys like _method", ct: "application/json", body: `{"qty":1,"method":"card","payment_method":"card","x_method":"a","_methods":"b","order":{"note":"_method_"}}`, trust: untrusted},
			{name: "JSON escapes", ct: "application/vnd.api+json", body: `{"data":[{"type":"orders","attributes":{"note":"\"quoted\" \u00e9 \ud83d\ude00 \u005fmethods"}}]}`, trust: untrusted},
			{name: "text", ct: "text/plain", body: "_method=DELETE", trust: untrusted},
			{name: "not JSON under a JSON type", ct: "application/json; charset=utf-8", body: "_method=DELETE&.method=DELETE", trust: untrusted},
		},
		// A handler that reads the raw body (to check a webhook's signature
		// over it, say) gets the bytes sent after the middleware looked for
		// _method in them; one that parses the form gets its fields.
		"TestFormBodyReachesTheHandlerWhole": {
			{name: "urlencoded", ct: urlencoded, body: "token=xoxb&text=a%2Bb+c%2520d&team_id=T1", text: "a+b c%20d"},
			{name: "multipart", ct: hookCT, body: hookBody, text: "a+b c%20d"},
		},
		// A JSON body (a Content-Type Laravel reads as JSON) holding a
		// string, key or value, read as _method, escapes decoded.
		"TestJSONBodyStringReadAsMethodFailsTheRead": jsonRows(
			[]string{`{"_method":"DELETE"}`, `{"\u005fmethod":"DELETE"}`, `{"\u005F\u006D\u0065\u0074\u0068\u006F\u0064":"DELETE"}`,
				`{"_\method":"DELETE"}`, `{"_METHOD":"DELETE"}`, `{".method":"DELETE"}`, `{"_method[]":["DELETE"]}`,
				`{"order":{"note":"x"},"list":["_method"]}`, `{"note":"_method\u0000x"}`, `{"_method`},
			[]string{`{"payment_method":"card","method":"card","_methods":1,"x_method":2,"note":"\"_method\" \\ \u00e9 \ud83d\ude00"}`,
				`[1, true, null, -2.5e3, {"a": "b\/c\n"}]`, `"\u005fmethodx"`}),
		// The JSON guard reads the bytes sent, as UTF-8; Express's
		// body-parser inflates gzip and decodes any "utf-" charset first.
		"TestJSONBodyMustBeIdentityEncodedUTF8": {
			{name: "utf-16le", ct: "application/json; charset=utf-16le", body: string(utf16), status: 415, says: "JSON"},
			{name: "quoted utf-16", ct: `application/json; Charset="UTF-16"`, body: string(utf16), status: 415, says: "JSON"},
			{name: "latin1", ct: "application/json;charset=iso-8859-1", body: plainJSON, status: 415, says: "JSON"},
			{name: "gzip", ct: "application/json", headers: map[string]string{"Content-Encoding": "gzip"}, body: gz.String(), status: 415, says: "JSON"},
			{name: "gzip vendor json", ct: "application/vnd.api+json", headers: map[string]string{"Content-Encoding": "gzip"}, body: gz.String(), status: 415, says: "JSON"},
			{name: "utf-8", ct: "application/json; charset=UTF-8", body: plainJSON},
			{name: "no charset", ct: "application/json", body: plainJSON},
			{name: "identity", ct: "application/json", headers: map[string]string{"Content-Encoding": "identity"}, body: plainJSON},
		},
		// A method is POST in any case for the body guards: net/http serves
		// "post", the reference gateway grants it under a POST-only
		// permission, and Symfony upper-cases it before it takes _method.
		"TestLowercasePostBodyIsGuardedAsPost": {
			{name: "json", method: "post", ct: "application/json", body: doc, either: true},
			{name: "urlencoded", method: "post", ct: urlencoded, body: "_method=DELETE", either: true},
			{name: "multipart", method: "Post", ct: "multipart/form-data; boundary=Z", body: "--Z\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--Z--\r\n", either: true},
		},
		// CGI (so PHP) reads '_' in a header name as '-', and PHP '.' as
		// '_': every header the guards tell a body by, so spelt in any
		// case, is refused, saying which header to spell with '-'.
		"TestUnderscoredGuardedHeaderIsRefused": {
			{name: "Content_Type", body: doc, headers: map[string]string{"Content_Type": "application/json"}, status: 400, says: "Content-Type"},
			{name: "content_type", body: doc, headers: map[string]string{"content_type": "application/json"}, status: 400, says: "Content-Type"},
			{name: "Content_Encoding", body: doc, headers: map[string]string{"Content_Encoding": "gzip"}, status: 400, says: "Content-Encoding"},
			{name: "Content_Length", body: doc, headers: map[string]string{"Content_Length": "20"}, status: 400, says: "Content-Length"},
			{name: "Transfer_Encoding", body: doc, headers: map[string]string{"Transfer_Encoding": "chunked"}, status: 400, says: "Transfer-Encoding"},
			{name: "Content.Type", body: doc, headers: map[string]string{"Content.Type": "application/json"}, status: 400, says: "Content-Type"},
			{name: "Content.Encoding", body: doc, headers: map[string]string{"Content.Encoding": "gzip"}, status: 400, says: "Content-Encoding"},
		},
	}
	for group, cases := range groups {
		for _, tc := range cases {
			t.Run(group+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				for _, trust := range []int{untrusted, trusted} {
					if tc.trust != 0 && tc.trust != trust {
						continue
					}
					for how, split := range map[string]func(io.Reader) io.Reader{"whole": nil, "bytes": iotest.OneByteReader, "halves": iotest.HalfReader} {
						for _, form := range []bool{false, true} {
							tc.check(t, trust == trusted, form, split, how)
						}
					}
				}
			})
		}
	}

	// The premises: each multipart body above that must fail is one
	// mime/multipart reads _method from, or (a second boundary=) one Rack
	// reads a _method part from.
	for _, tc := range groups["TestMultipartFormMethodOverrideIsNeverRead"] {
		form := testkit.Must(multipart.NewReader(strings.NewReader(tc.body), b0).ReadForm(1 << 20))(t)
		require.Equal(t, []string{"DELETE"}, form.Value["_method"], "mime/multipart reads _method from %s", tc.name)
	}
	for _, tc := range groups["TestSecondBoundaryEqualsFailsEveryRead"] {
		m := rackMultipartBoundary.FindStringSubmatch(tc.ct)
		require.NotNil(t, m)
		if !tc.refused {
			require.Equal(t, webkit, m[1])
			continue
		}
		require.Equal(t, "Z", m[1], "Rack's boundary")
		p := testkit.Must(multipart.NewReader(strings.NewReader(tc.body), m[1]).NextPart())(t)
		require.Equal(t, "_method", p.FormName(), "the part Rack reads")
	}
}

// check serves tc through a granting middleware (_method trusted or not),
// its body split by split (nil: whole), to a handler that reads the body
// raw or (form) as r.ParseMultipartForm does, and checks what it read.
func (tc readCase) check(t *testing.T, trusting, form bool, split func(io.Reader) io.Reader, how string) {
	t.Helper()
	msg := []any{"trusted %v, %s, form %v", trusting, how, form}
	guard := middleware.Require(&fakeChecker{grant: true}, "orders", "write")
	if trusting {
		guard = guard.With(middleware.WithMethodOverride("_method"))
	}
	reached := false
	var read []byte
	var err error
	var method, text string
	posted := 0
	h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		if !form {
			read, err = io.ReadAll(r.Body)
			return
		}
		// r.ParseMultipartForm answers ErrNotMultipart for a urlencoded
		// body, whatever r.ParseForm answered.
		if err = r.ParseForm(); err == nil {
			if err = r.ParseMultipartForm(1 << 20); errors.Is(err, http.ErrNotMultipart) {
				err = nil
			}
		}
		method, text, posted = r.FormValue("_method"), r.FormValue("text"), len(r.PostForm)
	}))
	var body io.Reader = strings.NewReader(tc.body)
	if split != nil {
		body = split(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), cmp.Or(tc.method, http.MethodPost), "/orders/42", body)
	req.Header.Set("Authorization", "Bearer tok")
	if tc.ct != "" {
		req.Header.Set("Content-Type", tc.ct)
	}
	for k, v := range tc.headers {
		req.Header[k] = []string{v}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	switch {
	case tc.status != 0 || tc.either && !reached:
		require.False(t, reached, msg...)
		require.Equal(t, cmp.Or(tc.status, http.StatusBadRequest), rec.Code, msg...)
		name, message := errorBody(t, rec.Body.String())
		assert.Equal(t, http.StatusText(rec.Code), name)
		assert.Contains(t, message, tc.says, msg...)
	case tc.refused || tc.either:
		require.True(t, reached, msg...)
		require.Empty(t, method, msg...) // no stack reads a method from it
		// A raw read fails; so does net/http's parse of a POST's urlencoded
		// form, or of a multipart one naming _method, leaving no field.
		if mt, _, _ := mime.ParseMediaType(tc.ct); !form || tc.method == "" && (mt == urlencoded || strings.Contains(tc.ct, b0)) {
			require.ErrorIs(t, err, middleware.ErrFormMethodOverride, msg...)
			require.Zero(t, posted, msg...)
		}
	default:
		require.True(t, reached, msg...)
		require.Empty(t, method, msg...)
		if form { // net/http's own refusals (a ';' in a query) may stand
			require.NotErrorIs(t, err, middleware.ErrFormMethodOverride, msg...)
			require.True(t, tc.text == "" || text == tc.text, "the field text: %q; trusted %v, %s", text, trusting, how)
			return
		}
		require.NoError(t, err, msg...)
		require.Equal(t, tc.body, string(read), msg...)
	}
}

// upload is a multipart body under boundary XyZ of one file named name,
// as Go's mime/multipart Writer (and Chrome and Firefox) send it: the
// name verbatim in quotes.
func upload(t *testing.T, name string) string {
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	require.NoError(t, mw.SetBoundary("XyZ"))
	fw := testkit.Must(mw.CreateFormFile("upload", name))(t)
	_, _ = io.WriteString(fw, "%PDF-1.4 ...")
	require.NoError(t, mw.Close())
	require.Contains(t, b.String(), `filename="`+name+`"`)
	return b.String()
}

// urlencodedRows are urlencoded bodies that must fail every read, or
// reach the handler as sent, with _method not trusted (trusted, the
// middleware reads and checks it).
func urlencodedRows(refused, passed []string) (rows []readCase) {
	for _, b := range refused {
		rows = append(rows, readCase{name: "refused " + b[:min(len(b), 30)], ct: urlencoded, body: b, trust: untrusted, refused: true})
	}
	for _, b := range passed {
		rows = append(rows, readCase{name: "passed " + b[:min(len(b), 30)], ct: urlencoded, body: b, trust: untrusted})
	}
	return rows
}

// jsonRows are JSON bodies that must fail every read under two JSON
// Content-Types, or reach the handler as sent.
func jsonRows(refused, passed []string) (rows []readCase) {
	for _, b := range refused {
		for _, ct := range []string{"application/json", "Application/Vnd.Api+JSON; charset=utf-8"} {
			rows = append(rows, readCase{name: ct + " " + b, ct: ct, body: b, refused: true})
		}
	}
	for _, b := range passed {
		rows = append(rows, readCase{name: b, ct: "application/json", body: b})
	}
	return rows
}
