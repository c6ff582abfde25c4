package mockserver

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzCheckMembers$' -fuzztime 10m -parallel=1 ./mockserver

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// strictTarget is a body shape with a struct inside a slice, a map and an
// opaque member.
type strictTarget struct {
	Name  string              `json:"name"`
	Items []strictItem        `json:"items"`
	Attrs map[string][]string `json:"attributes"`
	Raw   json.RawMessage     `json:"raw"`
	Any   any                 `json:"any"`
}

type strictItem struct {
	Key   string `json:"key"`
	Value int    `json:"value"`
}

var strictType = reflect.TypeFor[strictTarget]()

func TestCheckMembers(t *testing.T) {
	t.Parallel()
	many := func(prefix string, n int) string {
		var b bytes.Buffer
		b.WriteString(`{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + prefix + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1`)
		}
		b.WriteString(`}`)
		return b.String()
	}
	tests := []struct {
		name, body, field string // field "" means no duplicate
	}{
		{"plain", `{"name":"x","items":[{"key":"a","value":1}],"attributes":{"a":["b"]},"raw":{"x":1},"any":[1]}`, ""},
		{"empty objects", `{"items":[{},{}],"attributes":{}}`, ""},
		{"exact twice", `{"name":"x","name":"y"}`, "name"},
		{"folded at the top", `{"name":"x","NAME":"y"}`, "NAME"},
		{"folded in a slice element", `{"items":[{"key":"a"},{"key":"a","Key":"b"}]}`, "items[].Key"},
		{"escaped name", `{"name":"x","n\u0061me":"y"}`, "name"},
		{"map keys differing in case", `{"attributes":{"Region":["eu"],"region":["us"]}}`, ""},
		{"map key twice", `{"attributes":{"region":["eu"],"region":["us"]}}`, "attributes.region"},
		{"raw message folds not", `{"raw":{"x":1,"X":2}}`, ""},
		{"raw message exact twice", `{"raw":{"x":1,"x":2}}`, "raw.x"},
		{"unknown member folds not", `{"other":{"x":1,"X":2}}`, ""},
		{"unknown members at the top fold", `{"other":1,"OTHER":2}`, "OTHER"},
		{"a field named in another case", `{"Name":"x"}`, "Name"},
		{"a field named in another case in an element", `{"items":[{"KEY":"a"}]}`, "items[].KEY"},
		{"a map key in another case is a key", `{"attributes":{"NAME":["x"]}}`, ""},
		{"any exact twice", `{"any":[{"a":1,"a":2}]}`, "any[].a"},
		{"big object without duplicates", many("k", 40), ""},
		{"big object with a late duplicate", many("k", 40)[:len(many("k", 40))-1] + `,"kaa":2}`, "kaa"},
		{"big struct object with a folded duplicate", `{"name":"x",` + many("k", 20)[1:len(many("k", 20))-1] + `,"nAme":"y"}`, "nAme"},
		{"strings holding delimiters", `{"name":"{\"name\":1,\"name\":2}","items":[{"key":"]}[{"}]}`, ""},
		{"malformed", `{"name":"x",`, ""},
		{"malformed name", `{"name" 1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMembers([]byte(tt.body), strictType)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var dup *errAmbiguousMember
			require.ErrorAs(t, err, &dup)
			require.Equal(t, tt.field, dup.field())
		})
	}
}

// TestCheckMembersAllocatesNothing: a typical decision body costs the
// checker no allocation.
func TestCheckMembersAllocatesNothing(t *testing.T) {
	body := []byte(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`)
	typ := reflect.TypeFor[authorizeRequest]()
	require.NoError(t, checkMembers(body, typ))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = checkMembers(body, typ) }))
}

// FuzzCheckMembers compares the scanner with a reference built on
// json.Decoder.Token: on valid JSON that decodeBody lets through (valid
// UTF-8: the decoder reads bad bytes as U+FFFD, so "\xff" and "\xfe" are
// one name to it) both find a duplicate or neither does; on anything else
// the scanner does not panic, and invalidUTF8 finds what utf8.Valid does.
func FuzzCheckMembers(f *testing.F) {
	for _, seed := range []string{
		`{"name":"x","NAME":"y"}`, `{"items":[{"key":"a","KEY":1}]}`, `{"attributes":{"a":[],"A":[]}}`,
		`{"raw":{"x":{"y":1,"y":2}}}`, `[{"a":1}]`, `"str"`, `{"n\u0061me":1,"name":2}`, `{"\u017fx":1}`,
		"{\"attributes\":{\"\xff\":[],\"\xfe\":[]}}", "{\"attributes\":{\"\xff\":[],\"\\ufffd\":[]}}",
		`{"attributes":{"\ud800":[],"\udc00":[]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := checkMembers(data, strictType)
		at, bad := invalidUTF8(data)
		if bad == utf8.Valid(data) || bad && (at >= len(data) || !utf8.Valid(data[:at]) || utf8.Valid(data[at:at+1])) {
			t.Fatalf("invalidUTF8 = %d, %v on %q", at, bad, data)
		}
		if bad || !json.Valid(data) {
			return
		}
		want := referenceCheck(data, strictType)
		if (got == nil) != (want == nil) {
			t.Fatalf("scanner %v, reference %v, on %q", got, want, data)
		}
	})
}

// referenceCheck is checkMembers written plainly on json.Decoder.Token, for
// FuzzCheckMembers; valid JSON only.
func referenceCheck(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		shape  *structShape
		elem   reflect.Type
		names  map[string]bool
		key    bool
		next   reflect.Type
	}
	var stack []*frame
	valueType := func() reflect.Type {
		if len(stack) == 0 {
			return t
		}
		top := stack[len(stack)-1]
		if top.object {
			top.key = true
			return top.next
		}
		return top.elem
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				continue
			}
			name := tok.(string)
			k := name
			if top.shape != nil {
				k = foldName([]byte(name))
			}
			if top.names[k] {
				return &errAmbiguousMember{name: name, other: name}
			}
			top.names[k] = true
			top.key = false
			if top.shape != nil {
				t, variantOf := top.shape.field([]byte(name))
				if variantOf != "" {
					return &errAmbiguousMember{name: name, other: variantOf, variant: true}
				}
				top.next = t
			} else {
				top.next = top.elem
			}
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			f := &frame{object: true, key: true, names: map[string]bool{}}
			switch vt := valueType(); {
			case vt == nil:
			case vt.Kind() == reflect.Struct:
				f.shape = shapeOf(vt)
			case vt.Kind() == reflect.Map:
				f.elem = decodable(vt.Elem())
			}
			stack = append(stack, f)
		case '[':
			f := &frame{}
			if vt := valueType(); vt != nil && (vt.Kind() == reflect.Slice || vt.Kind() == reflect.Array) {
				f.elem = decodable(vt.Elem())
			}
			stack = append(stack, f)
		case ']':
			stack = stack[:len(stack)-1]
		default:
			valueType()
		}
	}
}
