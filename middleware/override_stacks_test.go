package middleware_test

// The stacks the middleware names (override.go) each read a form key, a
// multipart part's name, a Content-Type and a header their own way. A
// method override any of them would take must be refused, not only the one
// net/http reads. Each stack below is modelled from its parser's source
// and answers with the method it performed; dan may write orders with
// POST or PUT only, so "performed DELETE" is a DELETE checked as a POST.

import (
	"cmp"
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

// stackCase is a POST dan sends to a stack behind the guard, which
// performs the method it reads from the request; premise, where set, is
// the stack's model reading _method from it.
type stackCase struct {
	name, target, ct, body string // target "" is /orders/42; ct none sends no Content-Type
	stack                  http.Handler
	premise                func() bool
}

// none is a Content-Type that is not sent.
const none = "\x00none"

// TestNoStackPerformsAMethodOtherThanTheOneChecked: whatever a POST holds
// that a stack behind the middleware (modelled from its parser's source:
// PHP's Symfony and Laravel, Rack 2 and 3, Express) reads as _method (a
// form key, a multipart part's name or header, a Content-Type it takes
// for a form, a JSON key), the stack never performs a method other than
// the one checked (dan may write orders with POST or PUT only: "performed
// DELETE" is a DELETE checked as a POST), trusted or not: the handler's
// read of the body fails, or the request is refused before the decision.
// The groups are the regression tests of the attack rounds, by name.
func TestNoStackPerformsAMethodOtherThanTheOneChecked(t *testing.T) {
	t.Parallel()
	guard, dan := danShop(t)
	trusting := guard.With(middleware.WithMethodOverride("_method"))
	php, rack2, express := overridingBy(urlencodedOnly, symfonyKey), overridingBy(urlencodedOnly, rackKey), overridingBy(urlencodedOnly, expressKey)
	plainKey := func(k string) bool { return k == "_method" }
	rackForms, phpForms := overridingBy(rackForm, plainKey), overridingBy(phpForm, plainKey)
	rackPart := func(name, head string) stackCase {
		return stackCase{name: name, ct: "multipart/form-data; boundary=XyZ", body: "--XyZ\r\n" + head + "\r\nDELETE\r\n--XyZ--\r\n",
			stack: multipartOverriding("XyZ", func(h string) bool { return rackMethodPart(h + "\r\n") }), premise: func() bool { return rackMethodPart(head) }}
	}
	phpPart := func(name, head string) stackCase {
		return stackCase{name: name, ct: "multipart/form-data; boundary=XyZ", body: "--XyZ\r\n" + head + "\r\n\r\nDELETE\r\n--XyZ--\r\n",
			stack: multipartOverriding("XyZ", phpMethodPart), premise: func() bool { return phpMethodPart(head) }}
	}
	phpNamed := func(name string) stackCase {
		ct, body := multipartBody(t, name, "DELETE")
		return stackCase{name: name, ct: ct, body: body, stack: phpMultipartOverriding}
	}
	rackNoBoundary := func(ct string) stackCase {
		return stackCase{name: ct, ct: ct, body: "_method=DELETE", stack: overridingBy(rackReadsAsUrlencoded, rackKey),
			premise: func() bool { return rackReadsAsUrlencoded([]string{ct}) }}
	}
	long := `form-data; name="note"; x="` + strings.Repeat("a", 1600) + `"`
	groups := map[string][]stackCase{
		// A form key PHP, Rack 2 or Express reads as _method, in a
		// urlencoded body or the query.
		"TestOverrideGuardRefusesEveryKeyAStackReadsAsMethod": {
			{name: "PHP .method", ct: urlencoded, body: ".method=DELETE", stack: php},
			{name: "PHP %2Emethod", ct: urlencoded, body: "%2Emethod=DELETE", stack: php},
			{name: "PHP +_method", ct: urlencoded, body: "+_method=DELETE", stack: php},
			{name: "PHP %20%20_method", ct: urlencoded, body: "%20%20_method=DELETE", stack: php},
			{name: "PHP _method%00x", ct: urlencoded, body: "_method%00x=DELETE", stack: php},
			{name: "PHP %5Bmethod", ct: urlencoded, body: "%5Bmethod=DELETE", stack: php},
			{name: "PHP .method in the query", target: "/orders/42?.method=DELETE", ct: urlencoded, body: "a=1", stack: php},
			{name: "PHP _method%00 in the query", target: "/orders/42?_method%00=DELETE", ct: urlencoded, body: "a=1", stack: php},
			{name: "Rack 2 _method%5D", ct: urlencoded, body: "_method%5D=DELETE", stack: rack2},
			{name: "Rack 2 %5B_method", ct: urlencoded, body: "%5B_method=DELETE", stack: rack2},
			{name: "Rack 2 %5D%5D_method%5D", ct: urlencoded, body: "%5D%5D_method%5D=DELETE", stack: rack2},
			{name: "Rack 2 []_method", ct: urlencoded, body: "a=1&[]_method=DELETE", stack: rack2},
			{name: "Express %5B_method%5D", ct: urlencoded, body: "%5B_method%5D=DELETE", stack: express},
			{name: "Express _method%5B%5D", ct: urlencoded, body: "_method%5B%5D=DELETE", stack: express},
			{name: "Express _method[0]", ct: urlencoded, body: "_method[0]=DELETE", stack: express},
			{name: "Express [_method]", ct: urlencoded, body: "a=1&[_method]=DELETE", stack: express},
		},
		// A multipart part whose name PHP reads as _method.
		"TestMultipartGuardRefusesEveryPartNameAStackReadsAsMethod": {
			phpNamed("_method"), phpNamed(".method"), phpNamed(" _method"), phpNamed("[method"), phpNamed("_method\x00"),
		},
		// A POST body Rack or PHP parses as a form (no Content-Type, an
		// empty one, a media type cut at ',' or a space).
		"TestOverrideGuardCoversEveryBodyAStackReadsAsAForm": {
			{name: "Rack, none", ct: none, body: "_method=DELETE", stack: rackForms},
			{name: "Rack, empty", ct: "", body: "_method=DELETE", stack: rackForms},
			{name: "Rack, a blank", ct: " ", body: "_method=DELETE", stack: rackForms},
			{name: "Rack, a list", ct: "application/x-www-form-urlencoded, text/plain", body: "_method=DELETE", stack: rackForms},
			{name: "Rack, a list in another case", ct: "Application/X-WWW-Form-Urlencoded ,text/plain", body: "_method=DELETE", stack: rackForms},
			{name: "PHP, a list", ct: "application/x-www-form-urlencoded, text/plain", body: "_method=DELETE", stack: phpForms},
			{name: "PHP, a blank", ct: "application/x-www-form-urlencoded x", body: "_method=DELETE", stack: phpForms},
			{name: "PHP, a blank, upper case", ct: "APPLICATION/X-WWW-FORM-URLENCODED x", body: "_method=DELETE", stack: phpForms},
		},
		// A part Rack 3 (or PHP) files under _method by a header
		// mime/multipart reads otherwise: the header is not strict.
		"TestMultipartPartHeaderRackReadsOtherwiseIsRefused": {
			// Rack: no Content-Disposition, the name is the Content-ID.
			rackPart("Content-ID, no Content-Disposition", "Content-ID: _method\r\n"),
			// Rack: a Content-Disposition over 1536 bytes is ignored.
			rackPart("Content-ID beside a long Content-Disposition", "Content-Disposition: "+long+"\r\nContent-ID: _method\r\n"),
			// Rack (param.lstrip!) and PHP (isspace before each pair): a \v
			// before name; mime.ParseMediaType refuses the repeated name.
			rackPart("a vertical tab before the last name", "Content-Disposition: form-data; name=x;\vname=_method\r\n"),
			rackPart("a form feed before the last name", "Content-Disposition: form-data; name=x;\fname=_method\r\n"),
			// Rack: after a quoted value, the next parameter starts where
			// the quote closed, ';' or not.
			rackPart("name after a quoted value, a blank between", "Content-Disposition: form-data; x=\"a\" name=_method\r\n"),
			rackPart("name right after a quoted value", "Content-Disposition: form-data; x=\"a\"name=_method\r\n"),
		},
		"TestMultipartPartHeaderPHPReadsOtherwiseIsRefused": {
			// php_ap_getword_conf takes a single quote as a quote; Go's
			// mime reads the token "'_method'".
			phpPart("a single-quoted name", "Content-Disposition: form-data; name='_method'"),
			// multipart_buffer_headers adds a line with no ':' to the
			// previous header's value; net/textproto only a line that
			// starts with a blank.
			phpPart("a second line with no colon", "Content-Disposition: form-data; name=\"x\"\r\n; name=_method"),
			phpPart("a vertical tab before the last name", "Content-Disposition: form-data; name=x;\vname=_method"), // isspace
			phpPart("control: name=_method", "Content-Disposition: form-data; name=_method"),                        // Go's reading
		},
		// A multipart Content-Type without a boundary, which Rack 2 and 3
		// parse as a urlencoded form, gets the urlencoded key guard.
		"TestMultipartWithoutBoundaryIsGuardedAsUrlencoded": {
			rackNoBoundary("multipart/form-data"), rackNoBoundary("multipart/form-data; charset=utf-8"),
			rackNoBoundary("multipart/mixed"), rackNoBoundary("Multipart/Related; type=text/plain"),
		},
		// A JSON body's _method, which Laravel takes the method from.
		"TestJSONBodyMethodOverrideIsRefused": {
			{name: "json", ct: "application/json", body: `{"_method":"DELETE"}`, stack: laravelOverriding},
			{name: "vendor json", ct: "application/vnd.api+json", body: `{"_method":"DELETE"}`, stack: laravelOverriding},
			{name: "json with a charset", ct: "application/json; charset=utf-8", body: `{"_method":"DELETE"}`, stack: laravelOverriding},
		},
	}
	for group, cases := range groups {
		for _, tc := range cases {
			t.Run(group+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				if tc.premise != nil {
					require.True(t, tc.premise(), "the stack's model reads _method from the request")
				}
				for trusted, g := range []middleware.Middleware{guard, trusting} {
					req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, cmp.Or(tc.target, "/orders/42"), strings.NewReader(tc.body))
					req.Header.Set("Authorization", "Bearer "+dan)
					if tc.ct != none {
						req.Header["Content-Type"] = []string{tc.ct}
					}
					rec := httptest.NewRecorder()
					g(tc.stack).ServeHTTP(rec, req)
					assert.NotEqual(t, "performed DELETE", rec.Body.String(),
						"trusted %v: checked as POST (dan may not DELETE), performed as DELETE by the stack behind", trusted == 1)
				}
			})
		}
	}
}
