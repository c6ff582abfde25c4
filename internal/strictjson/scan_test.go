package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestScannerGrammar: the scanner takes exactly RFC 8259 JSON text in
// UTF-8, without lone surrogates, nested at most 10,000 deep; a refusal is
// a *SyntacticError.
func TestScannerGrammar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"literals", `[true,false,null]`, true},
		{"numbers", `[0,-0,1,-1,10.5,1e3,1E+3,1e-3,-0.0e0,123456789012345678901234567890]`, true},
		{"strings with every escape", `["\"\\\/\b\f\n\r\t","\u00e9\u20AC"]`, true},
		{"a surrogate pair", `"\ud83d\ude00"`, true},
		{"UTF-8 as it is", "\"é€😀\"", true},
		{"white space everywhere", " \t\r\n{ \"a\" : [ 1 , { } ] , \"b\" : \"\" } \n", true},
		{"a scalar at the top", `"x"`, true},
		{"nested 10,000 deep", strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), true},

		{"nested 10,001 deep", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), false},
		{"empty", ``, false},
		{"white space only", " \n", false},
		{"a leading zero", `[01]`, false},
		{"a bare minus", `[-]`, false},
		{"a plus", `[+1]`, false},
		{"a dot without digits", `[1.]`, false},
		{"a fraction without an integer", `[.5]`, false},
		{"an exponent without digits", `[1e]`, false},
		{"an exponent sign without digits", `[1e+]`, false},
		{"hex", `[0x1]`, false},
		{"NaN", `[NaN]`, false},
		{"a truncated literal", `[tru]`, false},
		{"a literal in another case", `[True]`, false},
		{"a literal running on", `[truex]`, false},
		{"single quotes", `['a']`, false},
		{"a control character in a string", "[\"a\tb\"]", false},
		{"an unknown escape", `["\x"]`, false},
		{"a short \\u escape", `["\u12"]`, false},
		{"a \\u escape with a non-hex digit", `["\u12g4"]`, false},
		{"a lone high surrogate", `["\ud800"]`, false},
		{"a lone high surrogate before text", `["\ud800abcdef"]`, false},
		{"a high surrogate before another escape", `["\ud800\n"]`, false},
		{"two high surrogates", `["\ud800\ud800"]`, false},
		{"a lone low surrogate", `["\udc00"]`, false},
		{"invalid UTF-8 in a string", "[\"\xff\"]", false},
		{"an encoded surrogate in a string", "[\"\xed\xa0\x80\"]", false},
		{"an overlong encoding in a string", "[\"\xc0\xaf\"]", false},
		{"invalid UTF-8 outside a string", "[1]\xff", false},
		{"an unterminated string", `["abc`, false},
		{"a trailing comma in an array", `[1,]`, false},
		{"a trailing comma in an object", `{"a":1,}`, false},
		{"a missing comma", `[1 2]`, false},
		{"a missing colon", `{"a" 1}`, false},
		{"a name that is not a string", `{1:1}`, false},
		{"a name without a value", `{"a"}`, false},
		{"a mismatched close", `[1}`, false},
		{"an unclosed array", `[1`, false},
		{"an unclosed object", `{"a":1`, false},
		{"two values", `1 2`, false},
		{"a comment", `[1]//`, false},
		{"a byte order mark", "\ufeff[1]", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v any
			err := Unmarshal([]byte(tt.text), &v)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			var se *SyntacticError
			require.ErrorAs(t, err, &se)
		})
	}
}

// TestSyntacticErrorSaysWhatAndWhere: a refusal names the offending byte
// (or the end of the input), what the grammar wanted there, and the value
// it is in, in the words json v2 used, which messages of the reference
// server and its fixture loader quote.
func TestSyntacticErrorSaysWhatAndWhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text   string
		offset int64
		err    string
		is     error
	}{
		{`{"name": acme}`, 9, `invalid character 'a' at start of value within "/name" after offset 9`, nil},
		{`{"name": "acme",}`, 15, `invalid character ',' at start of value after offset 15`, nil},
		{`[1,]`, 2, `invalid character ',' at start of value within "/1" after offset 2`, nil},
		{`{"a":{"b":1]}`, 11, `invalid character ']' after object value (expecting ',' or '}') within "/a" after offset 11`, nil},
		{`{"a":[1 2]}`, 8, `invalid character '2' after array element (expecting ',' or ']') within "/a" after offset 8`, nil},
		{`{"a" 1}`, 5, `invalid character '1' after object name (expecting ':') within "/a" after offset 5`, nil},
		{`{"a":[0,{"x~/y":tx}]}`, 17, `invalid character 'x' in literal true (expecting 'r') within "/a/1/x~0~1y" after offset 17`, nil},
		{`["\q"]`, 2, `invalid escape sequence "\\q" in string within "/0" after offset 2`, nil},
		{`["\ud800x"]`, 2, `invalid escape sequence "\\ud800" in string within "/0" after offset 2`, nil},
		{`["\ud800\u0041"]`, 2, `invalid surrogate pair "\\ud800\\u0041" in string within "/0" after offset 2`, nil},
		{"[\"a\xffb\"]", 3, `invalid UTF-8 within string within "/0" after offset 3`, nil},
		{"[\"a\nb\"]", 3, `invalid character '\n' in string (expecting non-control character) within "/0" after offset 3`, nil},
		{`[1.x]`, 3, `invalid character 'x' in number (expecting digit) within "/0" after offset 3`, nil},
		{`{"a":[`, 6, `unexpected EOF within "/a/0" after offset 6`, io.ErrUnexpectedEOF},
		{`"\ud800`, 7, `unexpected EOF after offset 7`, io.ErrUnexpectedEOF},
		{"\"\xe2\x82", 3, `unexpected EOF after offset 3`, io.ErrUnexpectedEOF},
		{`{} x`, 3, `data follows the JSON value after offset 3`, ErrTrailingData},
		{strings.Repeat("[", maxDepth+1), maxDepth, "exceeded max depth within \"" + strings.Repeat("/0", 50) + "…\" after offset 10000", nil},
	}
	for _, tt := range tests {
		t.Run(tt.text[:min(len(tt.text), 20)], func(t *testing.T) {
			t.Parallel()
			var v any
			err := Unmarshal([]byte(tt.text), &v)
			var se *SyntacticError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.offset, se.ByteOffset)
			assert.Equal(t, tt.err, se.Error())
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
		})
	}
}

// TestAppendUnquote: escapes decode to their runes, surrogate pairs to one
// rune; a text that is not one valid string is refused and dst kept.
func TestAppendUnquote(t *testing.T) {
	t.Parallel()
	got := testkit.Must(AppendUnquote([]byte("x:"), []byte(`"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00é"`)))(t)
	assert.Equal(t, "x:a\"\\/\b\f\n\r\té😀é", string(got))
	for _, bad := range []string{``, `a`, `"a`, `"a"b`, `"\ud800"`, "\"\xff\""} {
		got, err := AppendUnquote([]byte("x"), []byte(bad))
		require.Error(t, err, bad)
		assert.Equal(t, "x", string(got), bad)
	}
}

// TestValueKind: a Value names its kind by its first byte after white
// space; an empty one has none.
func TestValueKind(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]Kind{`"a"`: '"', ` -1`: '0', "\n7": '0', `true`: 't', `false`: 'f',
		`null`: 'n', `{}`: '{', `[]`: '[', ``: 0, `  `: 0} {
		assert.Equal(t, want, Value(text).Kind(), text)
	}
}

// FuzzScanner compares the scanner with encoding/json, an independent
// reader in the standard library: the scanner takes a text exactly when
// encoding/json finds it valid, it is UTF-8 and no escape in it is a lone
// surrogate (encoding/json reads those as U+FFFD; json v2 and the scanner
// refuse them); what it takes, encoding/json reads as Unmarshal does, and
// Reader.Value returns the value whole. The fuzzers of
// integration/interop/strictjson_test.go compare it with json v2 as well.
// Run it longer than its seeds with:
//
//	go test -run '^$' -fuzz '^FuzzScanner$' -fuzztime 10m ./internal/strictjson
func FuzzScanner(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00"]}`, `[01]`, `[1.]`, `["\ud800"]`, `["\udc00\ud800"]`,
		"[\"\xff\"]", `{"a":1,}`, `[1,]`, `"\\ud800"`, ` {"a" : {"b" : [ ] } } `, `1 2`, `[tru]`, `-`, `{"a":1,"a":2}`,
		`[[[[[[]]]]]]`, "\"\t\"", `"\u0000"`, `"\/"`, `1e400`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := New()
		r.Reset(data)
		raw, err := r.Value()
		if err == nil {
			err = r.End()
		}
		valid := json.Valid(data) && utf8.Valid(data) && !loneSurrogate(data)
		if (err == nil) != valid {
			t.Fatalf("scanner: %v; encoding/json valid %v, UTF-8 %v, lone surrogate %v: %q",
				err, json.Valid(data), utf8.Valid(data), loneSurrogate(data), data)
		}
		var se *SyntacticError
		if err != nil && !errors.As(err, &se) && !errors.Is(err, ErrTrailingData) {
			t.Fatalf("unclassified error %T %v on %q", err, err, data)
		}
		if !valid {
			return
		}
		if !bytes.Equal(raw, bytes.TrimSpace(data)) {
			t.Fatalf("Value returned %q of %q", raw, data)
		}
		var got, want any
		err = Unmarshal(data, &got)
		if errors.Is(err, ErrDuplicateMember) || errors.Is(err, ErrWrongType) { // a name twice; a number out of float64's range
			return
		}
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &want))
		require.Equal(t, want, got)
	})
}

// loneSurrogate reports whether a \u escape in data, valid JSON, is a
// surrogate not in a high-low pair. A '\' appears only in strings there.
func loneSurrogate(data []byte) bool {
	hex := func(b []byte) (r rune, ok bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		for _, c := range b[2:6] {
			var d byte
			switch {
			case '0' <= c && c <= '9':
				d = c - '0'
			case 'a' <= c && c <= 'f':
				d = c - 'a' + 10
			case 'A' <= c && c <= 'F':
				d = c - 'A' + 10
			}
			r = r<<4 | rune(d)
		}
		return r, true
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := hex(data[i:])
		switch {
		case !ok:
			i++ // \n, \\, ...
		case 0xdc00 <= r && r <= 0xdfff:
			return true
		case 0xd800 <= r && r <= 0xdbff:
			if r2, ok := hex(data[i+6:]); !ok || r2 < 0xdc00 || r2 > 0xdfff {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

// TestStandsOnTheStandardLibrary: the strict reader every client shares
// imports the standard library only, so that reading JSON adds no module
// to a user's graph (issue 25: a pep-only program's module graph).
func TestStandsOnTheStandardLibrary(t *testing.T) {
	t.Parallel()
	files := testkit.Must(filepath.Glob("*.go"))(t)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f := testkit.Must(parser.ParseFile(fset, name, nil, parser.ImportsOnly))(t)
		for _, imp := range f.Imports {
			path := testkit.Must(strconv.Unquote(imp.Path.Value))(t)
			first, _, _ := strings.Cut(path, "/")
			assert.NotContains(t, first, ".", "%s imports %s, which is not in the standard library", name, path)
		}
	}
}
