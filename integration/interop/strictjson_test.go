package interop_test

import (
	"errors"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// jsonTarget is a body shape with a struct inside a slice, a map of slices,
// opaque members and a closed object.
type jsonTarget struct {
	Name   string              `json:"name"`
	Items  []jsonItem          `json:"items"`
	Attrs  map[string][]string `json:"attributes"`
	Count  int8                `json:"count"`
	Ratio  float32             `json:"ratio"`
	Any    any                 `json:"any"`
	Closed *jsonClosed         `json:"closed"`
	Skip   string              `json:"-"`
	jsonEmbedded
}

type jsonItem struct {
	Key   string `json:"key"`
	Value uint16 `json:"value"`
	On    bool   `json:"on"`
}

type jsonEmbedded struct {
	Note string `json:"note"`
}

type jsonClosed struct {
	Method string `json:"method"`
}

func (jsonClosed) ClosedJSONObject() {}

// FuzzStrictJSONAgainstJSONv2 holds the module's strict reader
// (internal/strictjson: its own scanner, its walk, then encoding/json) to
// json v2 (github.com/go-json-experiment/json), the independent reader it
// was once built on, which refuses names given twice, invalid UTF-8 and
// lone surrogates and matches names case-sensitively: the scanner takes
// exactly the texts jsontext finds valid; whatever strictjson.Unmarshal
// reads, json v2 reads the same. Run it longer than its seeds with:
//
//	go test -run '^$' -fuzz '^FuzzStrictJSONAgainstJSONv2$' -fuzztime 10m ./interop
func FuzzStrictJSONAgainstJSONv2(f *testing.F) {
	for _, seed := range []string{
		`{"name":"x","items":[{"key":"a","value":7,"on":true}],"attributes":{"a":["b"]},"count":-8,"ratio":1.5,"any":[1,{"x":null}],"closed":{"method":"GET"},"note":"n"}`,
		`{"name":"x","NAME":"y"}`, `{"items":[{"key":"a","KEY":1}]}`, `{"attributes":{"a":[],"A":[]}}`,
		`{"any":{"x":{"y":1,"y":2}}}`, `[{"a":1}]`, `"str"`, `{"n\u0061me":1,"name":2}`, `{"\u017fx":1}`,
		"{\"items\":[],\"item\u017f\":1}", "{\"items\":[{\"\u212aey\":1}]}", `{"closed":{"method":"GET","verb":1}}`,
		"{\"attributes\":{\"\xff\":[],\"\xfe\":[]}}", `{"attributes":{"\ud800":[],"\udc00":[]}}`, `{"name":"\ud83d\ude00"}`,
		`{"count":128}`, `{"count":1.0}`, `{"ratio":1e39}`, `{"items":[{"value":-1}]}`, `{"items":[{"on":1}]}`,
		`{"name":null,"items":null}`, `{"any":1e400}`, `[01]`, `{"a":1,}`, `{"name":"x"} {}`, "{\"name\":\"\t\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := strictjson.New()
		r.Reset(data)
		_, err := r.Value()
		if err == nil {
			err = r.End()
		}
		if valid := jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true)); (err == nil) != valid {
			t.Fatalf("strictjson's scanner: %v; jsontext valid %v: %q", err, valid, data)
		}

		var got jsonTarget
		err = strictjson.Unmarshal(data, &got)
		var (
			me *strictjson.MemberError
			se *strictjson.SyntacticError
			te *strictjson.TypeError
		)
		if err != nil && !errors.As(err, &me) && !errors.As(err, &se) && !errors.As(err, &te) {
			t.Fatalf("unclassified error %T %v on %q", err, err, data)
		}
		var want jsonTarget
		errv2 := jsonv2.Unmarshal(data, &want)
		var sev2 *jsontext.SyntacticError
		if errors.As(errv2, &sev2) && !errors.Is(errv2, jsontext.ErrDuplicateName) && err == nil {
			t.Fatalf("json v2 finds a syntax error (%v), strictjson none, in %q", errv2, data)
		}
		if err != nil {
			return // strictjson may refuse more: names in another case, a name twice, a value out of range
		}
		if errv2 != nil {
			t.Fatalf("strictjson reads %q, json v2 does not: %v", data, errv2)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("strictjson reads %+v, json v2 reads %+v, from %q", got, want, data)
		}
	})
}
