package middleware_test

// The stacks the middleware names (override.go) each read a form key, a
// multipart part's name, a Content-Type and a header their own way. A
// method override any of them would take must be refused, not only the one
// net/http reads. Each stack below is modelled from its parser's source
// and answers with the method it performed; dan may write orders with
// POST or PUT only, so "performed DELETE" is a DELETE checked as a POST.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/middleware"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
	"github.com/orgauthz/orgauthz/pep"
)

// phpName is the name PHP (php_register_variable_ex) registers a form key
// or part name under, and whether it is an array ("name[...]"): cut at a
// NUL byte, leading spaces dropped, then ' ' and '.' turned into '_' up to
// the first '['; a '[' with no ']' after it turned into '_' too.
func phpName(k string) (name string, array bool) {
	k, _, _ = strings.Cut(k, "\x00")
	k = strings.TrimLeft(k, " ")
	if i := strings.IndexByte(k, '['); i >= 0 {
		if strings.Contains(k[i:], "]") {
			k, array = k[:i], true
		} else {
			k = k[:i] + "_" + k[i+1:]
		}
	}
	return strings.NewReplacer(" ", "_", ".", "_").Replace(k), array
}

// overridingBy is a stack behind the guarded Go proxy that, on a POST
// whose Content-Type isForm takes for a urlencoded form (nil: none sent),
// reads the body and the query as method reads their keys, and performs
// the method of the first key read as _method (body first, then query),
// upper-cased, when it is PUT, PATCH or DELETE. It answers with the method
// it performed.
func overridingBy(isForm func(ct []string) bool, method func(key string) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		performed := r.Method
		if r.Method == http.MethodPost && isForm(r.Header["Content-Type"]) {
			body, _ := io.ReadAll(r.Body)
			for _, src := range []string{string(body), r.URL.RawQuery} {
				vs, _ := url.ParseQuery(src)
				for k, v := range vs {
					if u := strings.ToUpper(v[0]); method(k) && (u == "DELETE" || u == "PUT" || u == "PATCH") && performed == r.Method {
						performed = u
					}
				}
			}
		}
		_, _ = io.WriteString(w, "performed "+performed)
	}
}

// urlencodedOnly takes exactly application/x-www-form-urlencoded for a form.
func urlencodedOnly(ct []string) bool {
	return len(ct) > 0 && ct[0] == "application/x-www-form-urlencoded"
}

// symfonyKey: Symfony's Request::getMethod (Laravel enables the parameter
// override) takes $_POST['_method'], then $_GET['_method'], when a string.
func symfonyKey(k string) bool {
	name, array := phpName(k)
	return name == "_method" && !array
}

// rack2Key is the name Rack 2's parse_nested_query files a plain key under
// (normalize_params): leading '[' and ']' and trailing ']' dropped.
var rack2Key = regexp.MustCompile(`^[\[\]]*([^\[\]]+)\]*$`)

// rackKey: Rack::MethodOverride takes req.POST["_method"], Rack 2's reading.
func rackKey(k string) bool {
	m := rack2Key.FindStringSubmatch(k)
	return m != nil && m[1] == "_method"
}

// qsSegment is a bracketed segment of a key, as qs parses it.
var qsSegment = regexp.MustCompile(`\[[^\[\]]*\]`)

// expressKey: Express's extended urlencoded parser (qs) files "[x]" under
// x, "x[]" and "x[0]" as an array under x, and method-override takes the
// first value of an array.
func expressKey(k string) bool {
	seg := qsSegment.FindStringIndex(k)
	switch {
	case seg == nil:
		return k == "_method"
	case seg[0] == 0:
		return k[1:seg[1]-1] == "_method"
	default:
		inner := k[seg[0]+1 : seg[1]-1]
		return k[:seg[0]] == "_method" && (inner == "" || inner == "0")
	}
}

// TestOverrideGuardRefusesEveryKeyAStackReadsAsMethod: a form key PHP
// (Symfony, Laravel), Rack 2 or Express reads as _method, in a urlencoded
// body or the query, never makes the stack perform a method other than
// the one checked: the handler's read of the body fails, or the request
// is refused before the decision, trusted or not.
func TestOverrideGuardRefusesEveryKeyAStackReadsAsMethod(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	trusting := guard.With(middleware.WithMethodOverride("_method"))
	stacks := map[string]http.Handler{
		"PHP":     overridingBy(urlencodedOnly, symfonyKey),
		"Rack 2":  overridingBy(urlencodedOnly, rackKey),
		"Express": overridingBy(urlencodedOnly, expressKey),
	}
	for _, tc := range []struct{ stack, target, body string }{
		{"PHP", "/orders/42", ".method=DELETE"},
		{"PHP", "/orders/42", "%2Emethod=DELETE"},
		{"PHP", "/orders/42", "+_method=DELETE"},
		{"PHP", "/orders/42", "%20%20_method=DELETE"},
		{"PHP", "/orders/42", "_method%00x=DELETE"},
		{"PHP", "/orders/42", "%5Bmethod=DELETE"},
		{"PHP", "/orders/42?.method=DELETE", "a=1"},
		{"PHP", "/orders/42?_method%00=DELETE", "a=1"},
		{"Rack 2", "/orders/42", "_method%5D=DELETE"},
		{"Rack 2", "/orders/42", "%5B_method=DELETE"},
		{"Rack 2", "/orders/42", "%5D%5D_method%5D=DELETE"},
		{"Rack 2", "/orders/42", "a=1&[]_method=DELETE"},
		{"Express", "/orders/42", "%5B_method%5D=DELETE"},
		{"Express", "/orders/42", "_method%5B%5D=DELETE"},
		{"Express", "/orders/42", "_method[0]=DELETE"},
		{"Express", "/orders/42", "a=1&[_method]=DELETE"},
	} {
		for guardName, g := range map[string]middleware.Middleware{"": guard, "trusted, ": trusting} {
			t.Run(guardName+tc.stack+" "+tc.target+" "+tc.body, func(t *testing.T) {
				t.Parallel()
				h := g(stacks[tc.stack])
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, tc.target, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer "+dan)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				assert.NotEqual(t, "performed DELETE", rec.Body.String(),
					"checked as POST (dan may not DELETE), performed as DELETE by the %s stack behind", tc.stack)
			})
		}
	}
}

// phpMultipartOverriding is the PHP stack of symfonyKey reading a
// multipart POST body (rfc1867: each part's name goes through
// php_register_variable as a urlencoded key does).
var phpMultipartOverriding = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	method := r.Method
	if mr, err := r.MultipartReader(); err == nil && r.Method == http.MethodPost {
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			v, _ := io.ReadAll(p)
			if symfonyKey(p.FormName()) {
				method = strings.ToUpper(string(v))
			}
		}
	}
	_, _ = io.WriteString(w, "performed "+method)
})

// TestMultipartGuardRefusesEveryPartNameAStackReadsAsMethod: a multipart
// part whose name PHP reads as _method fails the handler's read, as one
// named _method does; so does one whose Content-Disposition
// mime.ParseMediaType refuses but a more lenient parser reads.
func TestMultipartGuardRefusesEveryPartNameAStackReadsAsMethod(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	h := guard(phpMultipartOverriding)
	for _, name := range []string{"_method", ".method", " _method", "[method", "_method\x00"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ct, body := multipartBody(t, name, "DELETE")
			rec := formRequest{target: "/orders/42", contentType: ct, body: body}.serve(t, h, dan)
			assert.NotEqual(t, "performed DELETE", rec.Body.String(),
				"checked as POST (dan may not DELETE), performed as DELETE by the PHP stack behind")
		})
	}
	for name, disposition := range map[string]string{
		"a repeated name parameter":   `form-data; name=".method"; name="x"`,
		"name beside a name* (PHP)":   `form-data; name="_method"; name*=utf-8''x`,
		"name* beside a name (Go)":    `form-data; name="x"; NAME*=utf-8''%5Fmethod`,
		"a token name, blanks around": "form-data ;  name = _method",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := "--XyZ\r\nContent-Disposition: " + disposition + "\r\n\r\nDELETE\r\n--XyZ--\r\n"
			h := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err := io.ReadAll(r.Body)
				assert.ErrorIs(t, err, middleware.ErrFormMethodOverride)
				_, _ = io.WriteString(w, "read")
			}))
			rec := formRequest{target: "/orders/42", contentType: "multipart/form-data; boundary=XyZ", body: b}.serve(t, h, dan)
			assert.Equal(t, "read", rec.Body.String())
		})
	}
}

// rackForm is Rack::Request#form_data? for a POST: no Content-Type, or a
// media type cut at ';' or ',' that is empty or urlencoded.
func rackForm(ct []string) bool {
	if len(ct) == 0 {
		return true
	}
	mt, _, _ := strings.Cut(strings.Split(ct[0], ",")[0], ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "" || mt == "application/x-www-form-urlencoded"
}

// phpForm is PHP's rule for parsing a POST body into $_POST: the
// Content-Type lower-cased and cut at ';', ',' or ' '.
func phpForm(ct []string) bool {
	if len(ct) == 0 {
		return false
	}
	v := strings.ToLower(ct[0])
	if i := strings.IndexAny(v, ";, "); i >= 0 {
		v = v[:i]
	}
	return v == "application/x-www-form-urlencoded"
}

// TestOverrideGuardCoversEveryBodyAStackReadsAsAForm: a POST body Rack or
// PHP parses as a form (no Content-Type, an empty one, a media type cut at
// ',' or a space) is guarded as a urlencoded one, trusted or not: a key
// _method in it never makes the stack perform another method than the one
// checked.
func TestOverrideGuardCoversEveryBodyAStackReadsAsAForm(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	trusting := guard.With(middleware.WithMethodOverride("_method"))
	plainKey := func(k string) bool { return k == "_method" }
	stacks := map[string]http.Handler{
		"Rack": overridingBy(rackForm, plainKey),
		"PHP":  overridingBy(phpForm, plainKey),
	}
	const none = "\x00none"
	for _, tc := range []struct{ stack, ct string }{
		{"Rack", none},
		{"Rack", ""},
		{"Rack", " "},
		{"Rack", "application/x-www-form-urlencoded, text/plain"},
		{"Rack", "Application/X-WWW-Form-Urlencoded ,text/plain"},
		{"PHP", "application/x-www-form-urlencoded, text/plain"},
		{"PHP", "application/x-www-form-urlencoded x"},
		{"PHP", "APPLICATION/X-WWW-FORM-URLENCODED x"},
	} {
		for guardName, g := range map[string]middleware.Middleware{"": guard, "trusted, ": trusting} {
			t.Run(guardName+tc.stack+" "+tc.ct, func(t *testing.T) {
				t.Parallel()
				req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/orders/42", strings.NewReader("_method=DELETE"))
				req.Header.Set("Authorization", "Bearer "+dan)
				if tc.ct != none {
					req.Header["Content-Type"] = []string{tc.ct}
				}
				rec := httptest.NewRecorder()
				g(stacks[tc.stack]).ServeHTTP(rec, req)
				assert.NotEqual(t, "performed DELETE", rec.Body.String(),
					"checked as POST (dan may not DELETE), performed as DELETE by the %s stack behind", tc.stack)
			})
		}
	}
}

// TestOverrideGuardPassesWhatNoStackReadsAsMethod: a form whose keys no
// stack reads as _method reaches the handler whole, as do a multipart
// upload as browsers and mime/multipart's Writer send it (files with a
// Content-Type, names as UTF-8) and a JSON body with no string read as
// _method; a body whose Content-Type no stack takes for a form or JSON
// streams to it as sent, whatever it holds.
func TestOverrideGuardPassesWhatNoStackReadsAsMethod(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
	})
	h := guard(echo)
	goCT, goBody := multipartBody(t, "qty", "1", "payment_method", "card", "note", "_method")
	const browser = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
	browserBody := "--" + browser + "\r\n" +
		"Content-Disposition: form-data; name=\"qty\"\r\n\r\n1\r\n" +
		"--" + browser + "\r\n" +
		"Content-Disposition: form-data; name=\"receipt\"; filename=\"Dan's r\u00e9c\u00e9piss\u00e9 (1).pdf\"\r\n" +
		"Content-Type: application/pdf\r\n\r\n%PDF-1.7\r\n--x\r\nnot: a header\r\n\r\n" +
		"--" + browser + "--\r\n"
	for _, tc := range []struct{ ct, body string }{
		{goCT, goBody},
		{"multipart/form-data; boundary=" + browser, browserBody},
		{`multipart/form-data; boundary="` + browser + `"`, browserBody},
		{"multipart/form-data; boundary=" + browser + "; charset=utf-8", browserBody},
		{urlencoded, "qty=1&method=card&payment_method=card&_methods=2&x_method=1&order[_method]=a&_method_=b&x=_method"},
		{urlencoded, "note=" + url.QueryEscape(".method [_method] _method") + "&%5Bx%5D=1"},
		{"application/json", `{"qty":1,"method":"card","payment_method":"card","x_method":"a","_methods":"b","order":{"note":"_method_"}}`},
		{"application/vnd.api+json", `{"data":[{"type":"orders","attributes":{"note":"\"quoted\" \u00e9 \ud83d\ude00 \u005fmethods"}}]}`},
		{"text/plain", "_method=DELETE"},
		{"application/json; charset=utf-8", "_method=DELETE&.method=DELETE"},
	} {
		t.Run(tc.ct+" "+tc.body, func(t *testing.T) {
			t.Parallel()
			rec := formRequest{target: "/orders/42", contentType: tc.ct, body: tc.body}.serve(t, h, dan)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			assert.Equal(t, tc.body, rec.Body.String())
		})
	}
}

// TestTrustedFormMethodIsTakenOnlyWhereEveryStackReadsTheForm: with
// _method trusted, the method a urlencoded body names is checked only when
// every stack parses that body as a form: under a Content-Type net/http
// reads as urlencoded and Rack or PHP does not (a dotted İ), or Laravel
// reads as JSON (one holding "/json"), the stack
// behind performs the POST, so the request is refused with 400 rather
// than checked as the DELETE. dave may write orders with DELETE or PUT
// only.
func TestTrustedFormMethodIsTakenOnlyWhereEveryStackReadsTheForm(t *testing.T) {
	t.Parallel()
	gw := mockservertest.Start(t, mockserver.WithFixture(deleteShop), es256Tokens)
	client := newPep(t, gw, "shop", "orders-api", pep.WithHTTPClient(gw.Client()))
	dave := gw.Token("shop", "dave")
	trusting := middleware.Require(client, "orders", "write").With(middleware.WithMethodOverride("_method"))
	plainKey := func(k string) bool { return k == "_method" }
	for _, tc := range []struct {
		name, ct string
		stack    http.Handler
		status   int
		body     string
	}{
		{"Rack, a dotted İ", "appl\u0130cation/x-www-form-urlencoded", overridingBy(rackForm, plainKey), 400, ""},
		{"PHP, a dotted İ", "appl\u0130cation/x-www-form-urlencoded", overridingBy(phpForm, plainKey), 400, ""},
		{"PHP, a tab before the parameter", "application/x-www-form-urlencoded\t; charset=utf-8", overridingBy(phpForm, plainKey), 400, ""},
		{"Laravel, a JSON Content-Type parameter", "application/x-www-form-urlencoded; profile=a/json", laravelOverriding, 400, ""},
		{"Rack, as it is spelt", "application/x-www-form-urlencoded", overridingBy(rackForm, plainKey), 200, "performed DELETE"},
		{"PHP, with a charset", "application/x-www-form-urlencoded; charset=utf-8", overridingBy(phpForm, plainKey), 200, "performed DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := formRequest{target: "/orders/42", contentType: tc.ct, body: "_method=DELETE"}.serve(t, trusting(tc.stack), dave)
			assert.NotEqual(t, "performed POST", rec.Body.String(), "checked as DELETE (dave may not POST), performed as POST by the stack behind")
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			if tc.status == http.StatusOK {
				assert.Equal(t, tc.body, rec.Body.String())
			}
		})
	}
}

// TestParsedFormKeyAStackReadsAsMethodIsRefused: a form an outer handler
// parsed that holds a key a stack reads as _method (".method" for PHP) is
// refused with 400 before the decision, as one holding _method is without
// trust, and as a lookalike with it.
func TestParsedFormKeyAStackReadsAsMethodIsRefused(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	for guardName, g := range map[string]middleware.Middleware{"": guard, "trusted, ": guard.With(middleware.WithMethodOverride("_method"))} {
		for _, key := range []string{".method", "[_method]", "_method[]"} {
			t.Run(guardName+key, func(t *testing.T) {
				t.Parallel()
				parsing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					require.NoError(t, r.ParseForm())
					g(echoMethod).ServeHTTP(w, r)
				})
				rec := formRequest{target: "/orders/42", contentType: urlencoded, body: url.Values{key: {"DELETE"}}.Encode()}.serve(t, parsing, dan)
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				name, message := errorBody(t, rec.Body.String())
				assert.Equal(t, "Bad Request", name)
				assert.Contains(t, message, "_method")
			})
		}
	}
}
