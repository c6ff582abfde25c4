package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// target is a body shape with a struct inside a slice, a map of slices,
// opaque members and a closed object.
type target struct {
	Name   string              `json:"name"`
	Items  []item              `json:"items"`
	Attrs  map[string][]string `json:"attributes"`
	Raw    json.RawMessage     `json:"raw"`
	Any    any                 `json:"any"`
	Closed *closedPart         `json:"closed"`
	Skip   string              `json:"-"`
	embedded
}

type item struct {
	Key   string `json:"key"`
	Value int    `json:"value"`
}

type embedded struct {
	Note string `json:"note"`
}

type closedPart struct {
	Method string `json:"method"`
}

func (closedPart) ClosedJSONObject() {}

// TestUnmarshalRule names each part of the rule: what it refuses, where,
// and what it lets through.
func TestUnmarshalRule(t *testing.T) {
	t.Parallel()
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `"%s%d":1,`, prefix, i)
		}
		return b.String()
	}
	tests := []struct {
		name, body string
		field      string // the member at fault; "" when the body is read
		is         error
	}{
		{"plain", `{"name":"x","items":[{"key":"a","value":1}],"attributes":{"a":["b"]},"raw":{"x":1},"any":[1],"closed":{"method":"GET"},"note":"n"}`, "", nil},
		{"empty objects", `{"items":[{},{}],"attributes":{}}`, "", nil},
		{"unknown members are ignored", `{"other":{"x":1,"X":2},"name":"x"}`, "", nil},
		{"exact twice", `{"name":"x","name":"y"}`, "name", ErrDuplicateMember},
		{"escaped twice", `{"name":"x","n\u0061me":"y"}`, "name", ErrDuplicateMember},
		{"folded at the top", `{"name":"x","NAME":"y"}`, "NAME", ErrAmbiguousMember},
		{"a non-ASCII name: long s (simple folding: s)", "{\"items\":[],\"item\u017f\":[]}", "itemſ", ErrNonASCIIMember},
		{"a non-ASCII name: the Kelvin sign (simple folding: k)", "{\"items\":[{\"key\":\"a\",\"\u212aey\":\"b\"}]}", "items[].\u212aey", ErrNonASCIIMember},
		{"a non-ASCII name: dotless i (upper-cases to I)", `{"name":"x","nıtems":[]}`, "nıtems", ErrNonASCIIMember},
		{"a non-ASCII name: dotted I (lower-cases to i)", `{"İtems":[]}`, "İtems", ErrNonASCIIMember},
		{"a non-ASCII name: sharp s (full folding: ss)", `{"items":[{"key":"a","keß":"b"}]}`, "items[].keß", ErrNonASCIIMember},
		{"a non-ASCII name: st ligature (upper-cases to ST)", `{"closed":{"method":"GET","ﬆ":1}}`, "closed.ﬆ", ErrNonASCIIMember},
		{"a non-ASCII name, escaped", `{"n\u0131tems":[]}`, "nıtems", ErrNonASCIIMember},
		{"a member with a letter some reader takes for ASCII", `{"name":"x","raiſon":"eu"}`, "raiſon", ErrNonASCIIMember},
		{"a non-ASCII unknown member no reader takes for a known one", `{"name":"x","région":"eu"}`, "", nil},
		{"non-ASCII map keys are data", `{"attributes":{"région":["eu"],"ıd":["x"]}}`, "", nil},
		{"non-ASCII names inside a raw value", `{"raw":{"ı":1,"İ":2},"any":{"ß":{"ﬆ":1}}}`, "", nil},
		{"non-ASCII names inside an unknown member's value", `{"other":{"ı":1,"ß":2}}`, "", nil},
		{"folded in a slice element", `{"items":[{"key":"a"},{"key":"a","Key":"b"}]}`, "items[].Key", ErrAmbiguousMember},
		{"a field named in another case", `{"Name":"x"}`, "Name", ErrAmbiguousMember},
		{"a field named in another case in an element", `{"items":[{"KEY":"a"}]}`, "items[].KEY", ErrAmbiguousMember},
		{"an embedded field in another case", `{"NOTE":"x"}`, "NOTE", ErrAmbiguousMember},
		{"a skipped field is unknown, in any case", `{"Skip":"x","skip":"y","SKIP":"z"}`, "skip", ErrAmbiguousMember},
		{"unknown members at the top fold", `{"other":1,"OTHER":2}`, "OTHER", ErrAmbiguousMember},
		{"map keys differing in case", `{"attributes":{"Region":["eu"],"region":["us"]}}`, "", nil},
		{"a map key naming a field", `{"attributes":{"NAME":["x"]}}`, "", nil},
		{"map key twice", `{"attributes":{"region":["eu"],"region":["us"]}}`, "attributes.region", ErrDuplicateMember},
		{"raw message folds not", `{"raw":{"x":1,"X":2}}`, "", nil},
		{"raw message exact twice", `{"raw":{"x":1,"x":2}}`, "raw.x", ErrDuplicateMember},
		{"any exact twice", `{"any":[{"a":1,"a":2}]}`, "any[].a", ErrDuplicateMember},
		{"unknown member's value exact twice", `{"other":{"x":{"y":1,"y":2}}}`, "other.x.y", ErrDuplicateMember},
		{"closed object: its own members", `{"closed":{"method":"GET"}}`, "", nil},
		{"closed object: another member", `{"closed":{"method":"GET","verb":"POST"}}`, "closed.verb", ErrUnknownMember},
		{"closed object: a field in another case", `{"closed":{"Method":"GET"}}`, "closed.Method", ErrAmbiguousMember},
		{"big object without clashes", `{` + many("k", 100) + `"name":"x"}`, "", nil},
		{"big object with a late exact duplicate", `{` + many("k", 100) + `"k7":2}`, "k7", ErrDuplicateMember},
		{"big struct object with a late folded duplicate", `{"name":"x",` + many("k", 100) + `"nAme":"y"}`, "nAme", ErrAmbiguousMember},
		{"big struct object with late unknown names that fold", `{` + many("k", 100) + `"K77":"y"}`, "K77", ErrAmbiguousMember},
		{"strings holding delimiters", `{"name":"{\"name\":1,\"name\":2}","items":[{"key":"]}[{"}]}`, "", nil},
		{"a type mismatch is not entered", `{"items":{"key":1,"KEY":2}}`, "", ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v target
			err := Unmarshal([]byte(tt.body), &v)
			switch {
			case tt.is == nil:
				require.NoError(t, err)
			case tt.field == "":
				require.ErrorIs(t, err, tt.is)
			default:
				require.ErrorIs(t, err, tt.is)
				var me *MemberError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, tt.field, me.Field())
				assert.Equal(t, byte('"'), tt.body[me.Offset], "the offset is where the name starts")
				assert.Equal(t, target{}, v, "nothing is decoded from a refused body")
			}
		})
	}
}

// TestUnmarshalErrorsSayWhere: every refusal names its place, so a server
// can answer with details and a file loader with a line and column.
func TestUnmarshalErrorsSayWhere(t *testing.T) {
	t.Parallel()
	var v target
	err := Unmarshal([]byte(`{"items":[{"key":"a","value":"one"}]}`), &v)
	var te *TypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "items[].value", te.Path)
	assert.Equal(t, int64(strings.Index(`{"items":[{"key":"a","value":"one"}]}`, `"one"`)), te.Offset)
	assert.Equal(t, "string", KindName(te.Found))
	require.ErrorIs(t, err, ErrWrongType)

	err = Unmarshal([]byte(`{"attributes":{"a":"b"}}`), &v)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "attributes.a", te.Path)

	err = Unmarshal([]byte(`{"closed":{"verb":"POST"}}`), &v)
	var me *MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, `closed.verb: unknown member: closed takes only "method"`, me.Error())

	for _, body := range []string{`{"name":"x"} {}`, "{\"name\":\"x\"}\n  x", `{"name":"x"}}`} {
		err = Unmarshal([]byte(body), &v)
		var se *SyntacticError
		require.ErrorAs(t, err, &se, body)
		require.ErrorIs(t, err, ErrTrailingData, body)
		assert.Equal(t, int64(len(`{"name":"x"}`)+strings.Count(body, "\n")+strings.Count(body, " ")), se.ByteOffset, body)
	}

	err = Unmarshal([]byte(`{"name":`), &v)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Error(t, Unmarshal([]byte("{\"name\":\"\xff\"}"), &v), "invalid UTF-8")
	require.Error(t, Unmarshal([]byte(`{}`), v), "not a pointer")
}

// TestUnmarshalRejectUnknownMembers closes every struct, as a fixture
// loader wants.
func TestUnmarshalRejectUnknownMembers(t *testing.T) {
	t.Parallel()
	var v target
	require.NoError(t, Unmarshal([]byte(`{"name":"x","attributes":{"any":["key"]}}`), &v, RejectUnknownMembers()))
	err := Unmarshal([]byte(`{"items":[{"key":"a","kye":1}]}`), &v, RejectUnknownMembers())
	var me *MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "items[].kye", me.Field())
	assert.Equal(t, []string{"key", "value"}, me.Known)
	require.NoError(t, Unmarshal([]byte(`{"items":[{"key":"a","kye":1}]}`), &v), "ignored without the option")
}

// TestWalkAllocatesNothing: the rule costs a typical decision body no
// allocation; only encoding/json's decoding of it allocates.
func TestWalkAllocatesNothing(t *testing.T) {
	type attrs struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	}
	type body struct {
		ClientID  string `json:"clientId"`
		Resources []struct {
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
		} `json:"resources"`
		Context *struct {
			Attributes *attrs `json:"attributes"`
		} `json:"context"`
	}
	data := []byte(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`)
	n := nodeOf(reflect.TypeFor[body]())
	u := new(walker) // one, not the pool's: the race detector drops pooled values at random
	check := func() {
		u.start(data)
		if err := u.check(n); err != nil {
			t.Fatal(err)
		}
		u.stop()
	}
	check()
	require.Zero(t, testing.AllocsPerRun(100, check))
}

// TestReaderAllocatesNothing: reading an answer as the clients do (typed
// reads, skipped and whole values, escaped strings) allocates nothing once
// the Reader and the caller's scratch space have grown: a client's Check
// pays for what it keeps, not for the reading.
func TestReaderAllocatesNothing(t *testing.T) {
	data := []byte(`{"status":"GRANT","cached":true,"permissions":[{"resource":"orders","scope":"re\u0061d","note":{"why":["role"]}},` +
		`{"resource":"invoices","scope":"read","extra":null}],"raw":{"a":[1,2.5e3]},"checked":{"b":"\"x\""}}`)
	top, entry := []string{"status", "cached", "permissions", "raw", "checked"}, []string{"resource", "scope"}
	r := New()
	var scratch []byte
	read := func() {
		r.Reset(data)
		n := 0
		err := r.Object()
		for i, ok := r.Next(top, &err); ok; i, ok = r.Next(top, &err) {
			switch i {
			case 0:
				_, err = r.Bytes(&scratch)
			case 1:
				_, err = r.Boolean()
			case 2:
				err = r.Array()
				for r.More(&err) && r.Kind() == '{' {
					err = r.Object()
					for _, ok := r.Next(entry, &err); ok; _, ok = r.Next(entry, &err) {
						_, err = r.Bytes(&scratch)
					}
					n++
				}
			case 3:
				_, err = r.Value()
			default:
				_, err = r.Checked()
			}
		}
		if err == nil {
			err = r.End()
		}
		if err != nil || n != 2 {
			t.Fatal(err, n)
		}
		r.Release()
	}
	read()
	require.Zero(t, testing.AllocsPerRun(100, read))
}

// TestHostileObjectsCostTheirSize: a 1 MiB object of distinct names, and
// one nested 1 MiB deep, cost memory in proportion to their size.
func TestHostileObjectsCostTheirSize(t *testing.T) {
	const size = 1 << 20
	var names strings.Builder
	names.WriteString(`{"name":"x"`)
	for i := 0; names.Len() < size; i++ {
		fmt.Fprintf(&names, `,"k%d":0`, i)
	}
	names.WriteString(`}`)
	bodies := map[string]struct {
		body string
		ok   bool
	}{
		"distinct names in a struct object": {names.String(), true},
		"open brackets":                     {strings.Repeat("[", size), false},
		"open objects":                      {strings.Repeat(`{"any":`, size/7), false},
	}
	for name, b := range bodies {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var v target
			err := Unmarshal([]byte(b.body), &v)
			runtime.ReadMemStats(&after)
			if b.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16*size))
		})
	}
}

// TestReaderRule: the streaming reader keeps the same rule for the members
// it is told to read.
func TestReaderRule(t *testing.T) {
	t.Parallel()
	names := []string{"status", "permissions"}
	read := func(body string) (status string, err error) {
		r := New()
		r.Reset([]byte(body))
		defer r.Release()
		err = r.Object()
		for i, ok := r.Next(names, &err); ok; i, ok = r.Next(names, &err) {
			if i == 0 {
				status, err = r.Str()
				continue
			}
			err = r.Array()
			for r.More(&err) {
				_, err = r.Value()
			}
		}
		if err == nil {
			err = r.End()
		}
		return status, err
	}
	tests := []struct {
		name, body string
		want       error // nil: read
	}{
		{"plain", `{"status":"GRANT","permissions":[]}`, nil},
		{"an unknown member", `{"status":"GRANT","reason":{"why":"role"}}`, nil},
		{"escaped names", `{"st\u0061tus":"GRANT"}`, nil},
		{"status twice", `{"status":"DENY","status":"GRANT"}`, ErrDuplicateMember},
		{"status twice, escaped", `{"status":"DENY","st\u0061tus":"GRANT"}`, ErrDuplicateMember},
		{"status in another case", `{"Status":"GRANT"}`, ErrAmbiguousMember},
		{"status beside a non-ASCII name (long s)", `{"status":"DENY","ſtatus":"GRANT"}`, ErrNonASCIIMember},
		{"status beside a non-ASCII name (st ligature)", `{"status":"GRANT","ﬆatus":"DENY"}`, ErrNonASCIIMember},
		{"a member with a letter some reader takes for ASCII", `{"status":"GRANT","raison":"a","raiſon":"b"}`, ErrNonASCIIMember},
		{"a non-ASCII unknown member no reader takes for a known one", `{"status":"GRANT","raison":"a","rαison":"b","région":"c"}`, nil},
		{"a non-ASCII unknown member, escaped", `{"status":"GRANT","stat\u0131s":"DENY"}`, ErrNonASCIIMember},
		{"non-ASCII names inside an unknown member", `{"status":"GRANT","reason":{"ı":1,"İ":[{"ß":2}]}}`, nil},
		{"two unknown members differing in case", `{"status":"GRANT","reason":"a","REASON":"b"}`, ErrAmbiguousMember},
		{"an unknown member twice", `{"status":"GRANT","reason":"a","reason":"b"}`, ErrDuplicateMember},
		{"twice inside an unknown member", `{"status":"GRANT","reason":{"a":1,"a":2}}`, ErrDuplicateMember},
		{"twice deep inside an unknown member", `{"status":"GRANT","reason":[{"a":[{"b":1,"b":2}]}]}`, ErrDuplicateMember},
		{"trailing data", `{"status":"GRANT"} {}`, ErrTrailingData},
		{"a number for a string", `{"status":1}`, ErrWrongType},
		{"an array for the object", `["status"]`, ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, err := read(tt.body)
			if tt.want == nil {
				require.NoError(t, err)
				assert.Equal(t, "GRANT", status)
				return
			}
			require.ErrorIs(t, err, tt.want)
			assert.NotContains(t, Problem(err), "status", "Problem quotes nothing of the answer")
		})
	}
}

// TestReaderBytesAliasTheAnswer: a string without escapes is the answer's
// own bytes, read without a copy; one with escapes is unescaped into the
// scratch space.
func TestReaderBytesAliasTheAnswer(t *testing.T) {
	t.Parallel()
	body := []byte(`["orders","\u006frders"]`)
	r := New()
	r.Reset(body)
	var scratch []byte
	var got [][]byte
	err := r.Array()
	for r.More(&err) {
		var b []byte
		b, err = r.Bytes(&scratch)
		got = append(got, b)
	}
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "orders", string(got[0]))
	assert.Equal(t, &body[2], &got[0][0], "no copy")
	assert.Equal(t, "orders", string(got[1]))
	assert.Equal(t, &scratch[0], &got[1][0])
}

func TestProblem(t *testing.T) {
	t.Parallel()
	var v target
	for body, want := range map[string]string{
		`{"name":"x","name":"y"}`: ErrDuplicateMember.Error(),
		`{"name":"x","Name":"y"}`: ErrAmbiguousMember.Error(),
		`{"closed":{"verb":"x"}}`: ErrUnknownMember.Error(),
		`{"name":1}`:              ErrWrongType.Error(),
		`{"name":"x"} 1`:          ErrTrailingData.Error(),
		`{"name":`:                "the body ends before the JSON value does",
		"":                        "the body ends before the JSON value does",
		" \n":                     "the body ends before the JSON value does",
		`{"name" "x"}`:            "the body is not well-formed JSON",
	} {
		assert.Equal(t, want, Problem(Unmarshal([]byte(body), &v)), body)
	}
	own := errors.New("own")
	assert.Equal(t, "own", Problem(fmt.Errorf("wrapped: %w", own), own))
}

// FuzzUnmarshal compares the walker with reference, the rule written
// plainly on encoding/json's Token: on valid JSON both refuse or neither
// does; whatever Unmarshal reads, encoding/json reads the same; on any
// input nothing panics and a refusal is a *MemberError, a
// *SyntacticError or a *TypeError. Run it longer than its seeds
// with:
//
//	go test -run '^$' -fuzz '^FuzzUnmarshal$' -fuzztime 10m ./internal/strictjson
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{"name":"x","NAME":"y"}`, `{"items":[{"key":"a","KEY":1}]}`, `{"attributes":{"a":[],"A":[]}}`,
		`{"raw":{"x":{"y":1,"y":2}}}`, `[{"a":1}]`, `"str"`, `{"n\u0061me":1,"name":2}`, `{"\u017fx":1}`,
		"{\"items\":[],\"item\u017f\":1}", "{\"items\":[{\"\u212aey\":1}]}", `{"closed":{"method":"GET","verb":1}}`,
		`{"nıtems":[],"name":"x"}`, `{"items":[{"keß":1}]}`, `{"attributes":{"ı":[]},"raw":{"ß":1}}`,
		"{\"attributes\":{\"\xff\":[],\"\xfe\":[]}}", `{"attributes":{"\ud800":[],"\udc00":[]}}`,
		`{"note":"n","Note":"m"}`, `{"items":[{"value":1.5}]}`, `{"any":{"a":{"b":[{"c":1,"c":2}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got target
		err := Unmarshal(data, &got)
		var (
			me *MemberError
			se *SyntacticError
			te *TypeError
		)
		if err != nil && !errors.As(err, &me) && !errors.As(err, &se) && !errors.As(err, &te) {
			t.Fatalf("unclassified error %T %v on %q", err, err, data)
		}
		if !json.Valid(data) || !utf8.Valid(data) || se != nil {
			return // encoding/json takes lone surrogates ("\\ud800") for U+FFFD; the scanner refuses them
		}
		if refused := reference(data); refused != (me != nil) {
			t.Fatalf("walker %v, reference refuses %v, on %q", err, refused, data)
		}
		if te != nil && json.Unmarshal(data, new(target)) == nil {
			t.Fatalf("walker %v, encoding/json reads %q", err, data)
		}
		var want target
		if err == nil && json.Unmarshal(data, &want) == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("read %+v, encoding/json reads %+v, from %q", got, want, data)
		}
	})
}

// reference reports whether data, valid JSON, breaks the rule when read as
// a target: it keeps every name of every object, knows target's fields by
// heart, and refuses a name that is not ASCII in an object whose names are
// matched to fields (readers disagree on the case of anything else), so
// that the strings.EqualFold it compares the others with folds ASCII only.
func reference(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	fields := map[string][]string{
		"target": {"name", "items", "attributes", "raw", "any", "closed", "note"},
		"item":   {"key", "value"},
		"closed": {"method"},
	}
	type frame struct {
		object bool
		kind   string // "target", "item", "closed" for a struct object; "items" for the items array
		names  []string
		key    bool
		next   string // the kind of the value after the name just read
	}
	var stack []*frame
	kindOfNext := func() string {
		if len(stack) == 0 {
			return "target"
		}
		top := stack[len(stack)-1]
		if top.object {
			top.key = true
			return top.next
		}
		if top.kind == "items" {
			return "item"
		}
		return ""
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
			top := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				continue
			}
			name := tok.(string)
			top.key, top.next = false, ""
			known := fields[top.kind]
			if known != nil && strings.ContainsFunc(name, takenForASCII) {
				return true // a reader could take it for a field's ASCII name
			}
			for _, other := range top.names {
				if other == name || known != nil && strings.EqualFold(other, name) {
					return true
				}
			}
			top.names = append(top.names, name)
			if known == nil {
				continue
			}
			isField := false
			for _, f := range known {
				if f == name {
					isField = true
				} else if strings.EqualFold(f, name) {
					return true
				}
			}
			switch {
			case !isField && top.kind == "closed":
				return true
			case top.kind == "target" && (name == "items" || name == "closed"):
				top.next = name
			}
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			k := kindOfNext()
			if k == "items" {
				k = ""
			}
			stack = append(stack, &frame{object: true, key: true, kind: k})
		case '[':
			k := kindOfNext()
			if k != "items" {
				k = ""
			}
			stack = append(stack, &frame{kind: k})
		case ']':
			stack = stack[:len(stack)-1]
		default:
			kindOfNext()
		}
	}
}

// TestNameSetSurvivesAHashCollision: two names with one hash are both
// kept, and a repeat of either is found. A collision is made by hand, since
// the seed is random.
func TestNameSetSurvivesAHashCollision(t *testing.T) {
	t.Parallel()
	var input bytes.Buffer
	var s nameSet
	add := func(name string) bool { // name as written in the input
		off := input.Len()
		input.WriteString(`"` + name + `",`)
		unquoted, err := AppendUnquote(nil, []byte(`"`+name+`"`))
		require.NoError(t, err)
		_, clash := s.add(unquoted, off, input.Bytes(), true)
		return clash
	}
	for i := range linearNames + 1 {
		require.False(t, add(fmt.Sprint("n", i)))
	}
	require.NotNil(t, s.index)
	s.index[s.hash([]byte("late"), true)] = s.offs[3] // "late" hashes as "n3" does
	require.False(t, add("late"), "another name with the same hash")
	require.True(t, add("LATE"), "found among the names whose hash was taken")
	require.True(t, add("N3"), "the name that holds the hash")
	require.False(t, add("n\\u0033x"))
	require.True(t, add("N3X"), "a name read again is unescaped")
}

// TestReaderChecked: Checked returns a member's value as it was sent, and
// refuses a name given twice anywhere inside it (names of one case and
// another are data there, as in a map).
func TestReaderChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       string // the value of "v"
		err        error
	}{
		{"a string", `{"v": "a\u0062"}`, `"a\u0062"`, nil},
		{"a number after white space", "{\"v\" :\n\t 12.5e1 }", `12.5e1`, nil},
		{"an object", `{"v":{"a":[1,{"b":null}],"A":2}}`, `{"a":[1,{"b":null}],"A":2}`, nil},
		{"a name twice inside", `{"v":{"a":1,"a":2}}`, "", ErrDuplicateMember},
		{"a name twice deep inside", `{"v":[{"a":[{"b":1,"b":2}]}]}`, "", ErrDuplicateMember},
		{"malformed inside", `{"v":{"a":}}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := New()
			r.Reset([]byte(tt.body))
			defer r.Release()
			var got []byte
			err := r.Object()
			for _, ok := r.Next([]string{"v"}, &err); ok; _, ok = r.Next([]string{"v"}, &err) {
				got, err = r.Checked()
			}
			switch {
			case tt.err != nil:
				require.ErrorIs(t, err, tt.err)
			case tt.want == "":
				require.Error(t, err)
			default:
				require.NoError(t, err)
				require.Equal(t, tt.want, string(got))
			}
		})
	}
}

// TestReaderCallsNothingBack: the Reader is read by the caller's own loop
// (Object, Next, Array, More); no method of it takes a function to call
// back, so that a client's decoding never climbs back up the import order
// from this package into the client's code.
func TestReaderCallsNothingBack(t *testing.T) {
	t.Parallel()
	rt := reflect.TypeFor[*Reader]()
	for i := range rt.NumMethod() {
		m := rt.Method(i)
		for j := range m.Type.NumIn() {
			assert.NotEqual(t, reflect.Func, m.Type.In(j).Kind(), "Reader.%s takes a function", m.Name)
		}
	}
}

// TestNextAndMoreStopAtTheCallersError: a loop whose body sets the error
// ends at once; nothing more of the object or array is read.
func TestNextAndMoreStopAtTheCallersError(t *testing.T) {
	t.Parallel()
	stop := errors.New("the caller's own error")
	r := New()
	r.Reset([]byte(`{"a":[1,2],"b":2}`))
	defer r.Release()
	var seen []int
	err := r.Object()
	for i, ok := r.Next([]string{"a", "b"}, &err); ok; i, ok = r.Next([]string{"a", "b"}, &err) {
		seen = append(seen, i)
		err = r.Array()
		for r.More(&err) {
			_, err = r.Value()
			if err == nil {
				err = stop
			}
		}
	}
	require.ErrorIs(t, err, stop)
	assert.Equal(t, []int{0}, seen, "the member after the error was read")
}

// TestUnmarshalLeavesTheValueOnATypeError: a value of the wrong JSON kind
// or out of its type's range is refused before anything is decoded, so a
// server never acts on half a body: the walk checks every value's kind and
// range as encoding/json would read it, ahead of encoding/json.
func TestUnmarshalLeavesTheValueOnATypeError(t *testing.T) {
	t.Parallel()
	type ranged struct {
		Name  string  `json:"name"`
		Small int8    `json:"small"`
		Count uint16  `json:"count"`
		Ratio float32 `json:"ratio"`
		On    bool    `json:"on"`
		List  []int   `json:"list"`
	}
	tests := []struct {
		name, body, path string
		found            Kind
	}{
		{"a string for an int", `{"name":"x","small":"1"}`, "small", '"'},
		{"past int8", `{"name":"x","small":128}`, "small", '0'},
		{"a fraction for an int", `{"name":"x","small":1.5}`, "small", '0'},
		{"a negative uint", `{"name":"x","count":-1}`, "count", '0'},
		{"past float32", `{"name":"x","ratio":1e39}`, "ratio", '0'},
		{"a number for a bool", `{"name":"x","on":1}`, "on", '0'},
		{"an object for a list", `{"name":"x","list":{}}`, "list", '{'},
		{"a string in a list", `{"name":"x","list":[1,"2"]}`, "list[]", '"'},
		{"an array for the object", `[{"name":"x"}]`, "", '['},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v ranged
			err := Unmarshal([]byte(tt.body), &v)
			var te *TypeError
			require.ErrorAs(t, err, &te)
			require.ErrorIs(t, err, ErrWrongType)
			assert.Equal(t, tt.path, te.Path)
			assert.Equal(t, tt.found, te.Found)
			assert.Equal(t, ranged{}, v, "nothing is decoded from a refused body")
		})
	}
	var v ranged
	require.NoError(t, Unmarshal([]byte(`{"name":"x","small":-128,"count":65535,"ratio":3.4e38,"on":false,"list":[1,null]}`), &v),
		"the edges of each range")
	assert.Equal(t, ranged{Name: "x", Small: -128, Count: 65535, Ratio: 3.4e38, List: []int{1, 0}}, v)
}

// TestTypeErrorsComeLast: a value of the wrong kind is reported only when
// the whole text is well-formed and keeps the rule, as encoding/json and
// json v2 report malformed JSON anywhere first: a body is malformed, or
// breaks the rule, before any of its values is of the wrong type.
func TestTypeErrorsComeLast(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]error{
		`"x`:                                io.ErrUnexpectedEOF, // an unterminated string where an object belongs
		`{"name":1,"items":[}`:              nil,                 // malformed after the wrong type
		`{"name":1,"name":"x"}`:             ErrDuplicateMember,
		`{"items":[{"value":"a","Key":1}]}`: ErrAmbiguousMember,
		`{"name":1} x`:                      ErrTrailingData,
		`{"name":1,"items":"x"}`:            ErrWrongType,
	} {
		var v target
		err := Unmarshal([]byte(body), &v)
		switch want {
		case nil:
			var se *SyntacticError
			require.ErrorAs(t, err, &se, body)
		case ErrWrongType:
			var te *TypeError
			require.ErrorAs(t, err, &te, body)
			assert.Equal(t, "name", te.Path, "the first of two")
		default:
			require.ErrorIs(t, err, want, body)
		}
	}
}

// TestUnmarshalTypesThatJudgeThemselves: a value the walk leaves to its
// type (a base64 string, a map key that must be a number, a type with its
// own UnmarshalJSON) is judged by encoding/json, and its refusal is a
// *TypeError too.
func TestUnmarshalTypesThatJudgeThemselves(t *testing.T) {
	t.Parallel()
	type judged struct {
		Bytes []byte          `json:"bytes"`
		ByID  map[int]string  `json:"byId"`
		Raw   json.RawMessage `json:"raw"`
		Num   json.Number     `json:"num"`
	}
	for _, body := range []string{`{"bytes":"!!"}`, `{"byId":{"x":"y"}}`, `{"num":"x"}`, `{"num":true}`} {
		var v judged
		err := Unmarshal([]byte(body), &v)
		var te *TypeError
		require.ErrorAs(t, err, &te, body)
		require.ErrorIs(t, err, ErrWrongType, body)
	}
	var v judged
	require.NoError(t, Unmarshal([]byte(`{"bytes":"AQI=","byId":{"7":"y"},"raw":{"a":[1]},"num":12.5}`), &v))
	assert.Equal(t, judged{Bytes: []byte{1, 2}, ByID: map[int]string{7: "y"}, Raw: json.RawMessage(`{"a":[1]}`), Num: "12.5"}, v)
}

// takenForASCII reports whether some reader could take r, which is not
// ASCII, for an ASCII letter: the reference's own account, from the
// unicode tables (simple upper, lower and title case, simple folding),
// full folding (ß, ẞ, the ligatures ﬀ to ﬆ) and the fullwidth forms.
func takenForASCII(r rune) bool {
	if r <= unicode.MaxASCII {
		return false
	}
	ascii := func(c rune) bool { return c <= unicode.MaxASCII }
	if ascii(unicode.ToUpper(r)) || ascii(unicode.ToLower(r)) || ascii(unicode.ToTitle(r)) ||
		strings.ContainsRune("ßẞﬀﬁﬂﬃﬄﬅﬆ", r) || 0xFF01 <= r && r <= 0xFF5E {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if ascii(f) {
			return true
		}
	}
	return false
}
