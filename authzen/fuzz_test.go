package authzen

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// The references of these fuzzers are built on encoding/json, apart from
// the client's reader (internal/strictjson): a text is read only when
// encoding/json finds it valid and it is UTF-8 (encoding/json alone would
// replace invalid bytes), into maps, whose keys are matched exactly
// (encoding/json would match a struct's fields in any case). The client
// may refuse more. The fuzzers of integration/interop/strictjson_test.go
// compare that reader with json v2 besides.

// readNamesOnce reports whether no object names a member the client reads
// (evaluations at the top, decision and context in an item) twice; other
// members may repeat, as the client ignores them. It walks encoding/json's
// tokens itself, apart from the client's reader.
func readNamesOnce(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		seen   map[string]bool
		name   bool // the next string token is a name
	}
	var stack []frame
	for {
		tok, err := d.Token()
		if err != nil {
			return true // the parsers themselves judge malformed input
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].name {
			if name, ok := tok.(string); ok {
				depth := n // 1: the top object, 3: an item
				if depth == 1 && (name == "evaluations" || name == "decision" || name == "context") || depth == 3 && (name == "decision" || name == "context") {
					if stack[n-1].seen[name] {
						return false
					}
					stack[n-1].seen[name] = true
				}
				stack[n-1].name = false
				continue
			}
		}
		d, _ := tok.(json.Delim)
		if n := len(stack); n > 0 && stack[n-1].object && d != '}' {
			stack[n-1].name = true // after this value, a name
		}
		switch d {
		case '{':
			stack = append(stack, frame{object: true, seen: map[string]bool{}, name: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return true
		}
	}
}

// refDoc reads body as the references do: valid JSON in UTF-8, into maps
// and slices.
func refDoc(body []byte) (doc any, ok bool) {
	if !utf8.Valid(body) || json.Unmarshal(body, &doc) != nil {
		return nil, false
	}
	return doc, true
}

// object returns v as an object; null is an empty one, and ok is false
// for anything else.
func object(v any) (map[string]any, bool) {
	if v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// allows reports whether an item, an object, grants: decision is true and
// the context (null or an object) holds no error; ok is false when the
// item does not decode (a decision that is not a boolean, a context that
// is not an object).
func allows(v any) (allowed, ok bool) {
	it, ok := object(v)
	if !ok {
		return false, false
	}
	d, isBool := it["decision"].(bool)
	if it["decision"] != nil && !isBool {
		return false, false
	}
	ctx, ok := object(it["context"])
	return ok && d && ctx["error"] == nil, ok
}

// refItems is an independent, strict reading of an Access Evaluations
// answer for the differential fuzz: encoding/json into maps (member names
// matched exactly, invalid UTF-8 refused, decision a JSON boolean), with
// readNamesOnce refusing a member it reads named twice. ok is false when
// the body is no valid answer for n items.
func refItems(body []byte, n int) (allowed []bool, ok bool) {
	doc, ok := refDoc(body)
	top, isObject := doc.(map[string]any)
	if !ok || !isObject || !readNamesOnce(body) {
		return nil, false
	}
	items, ok := top["evaluations"].([]any)
	if !ok || len(items) != n {
		return nil, false
	}
	for _, it := range items {
		a, ok := allows(it)
		if !ok {
			return nil, false
		}
		allowed = append(allowed, a)
	}
	return allowed, true
}

// FuzzDecodeEvaluations: whatever the PDP sends, the client allows an item
// only when the independent reader, given the same body, allows it too
// (ExecuteAll: the answer must have exactly the items asked). The client
// may deny more (it is stricter: members in another case, a context that is
// not an object), never allow more.
func FuzzDecodeEvaluations(f *testing.F) {
	for _, s := range []string{
		`{"evaluations":[{"decision":true},{"decision":false}]}`,
		`{"evaluations":[{"decision":true,"context":{"reason":"ok"}},{"decision":true,"context":{"error":{"status":404}}}]}`,
		`{"evaluations":[{"decision":true,"decision":false},{"decision":true}]}`,
		`{"evaluations":[{"Decision":true},{"decision":true}]}`,
		`{"evaluations":[{"decision":"true"},{"decision":1}]}`,
		`{"evaluations":[{"decision":true}],"evaluations":[{"decision":true},{"decision":true}]}`,
		`{"evaluations":[{"decision":true},{"decision":true},{"decision":true}]}`,
		`{"evaluations":[{"decision":true,"context":null},{"decision":true,"context":[]}]}`,
		`{"evaluations":[{"decision":true},{"decision":true}]} {}`,
		"{\"evaluations\":[{\"decision\":true,\"context\":{\"\xff\":1}},{\"decision\":true}]}",
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, k uint8) {
		n := 1 + int(k%4)
		items, err := decodeEvaluations(body, n)
		if err != nil {
			return // the client denies every item
		}
		ref, ok := refItems(body, n)
		for i := 0; i < n; i++ {
			if i >= len(items) || !decisionOf(items[i]).Allowed() {
				continue
			}
			if len(items) != n {
				continue // the client's caller denies a short ExecuteAll answer (send)
			}
			if !ok || !ref[i] {
				t.Fatalf("the client allows item %d of %q, the reference does not (reference ok=%v)", i, body, ok)
			}
		}
	})
}

// FuzzDecodeEvaluation: the same for the single Access Evaluation answer.
func FuzzDecodeEvaluation(f *testing.F) {
	for _, s := range []string{`{"decision":true}`, `{"decision":false}`, `{"decision":true,"context":{"error":"x"}}`,
		`{"decision":true,"Decision":false}`, `{"decision":true}x`, `{"decision":true,"decision":true}`, `{"decision":"true"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		it, err := decodeEvaluation(body)
		if err != nil || !decisionOf(it).Allowed() {
			return
		}
		doc, ok := refDoc(body)
		_, isObject := doc.(map[string]any)
		if allowed, valid := allows(doc); !ok || !isObject || !readNamesOnce(body) || !valid || !allowed {
			t.Fatalf("the client allows %q, the reference does not", body)
		}
	})
}

// FuzzSearchPage: a search page the client reads is one an exact,
// duplicate-refusing reader (encoding/json into maps, after a walk of its
// tokens that refuses any name given twice) reads the same, whenever that
// reader reads it at all; and the client never hands on a result without a
// type.
func FuzzSearchPage(f *testing.F) {
	for _, s := range []string{
		`{"page":{"next_token":"t","count":2,"total":3},"results":[{"type":"user","id":"a"},{"type":"user","id":"b","properties":{"x":1}}]}`,
		`{"results":[{"type":"user","type":"admin","id":"a"}]}`,
		`{"results":[{"Type":"user","id":"a"}]}`,
		`{"results":[{"name":"read"}],"page":{"next_token":""}}`,
		`{"results":[],"page":{"next_token":"","count":1}}`,
		`{"results":[{"type":"u","id":1}]}`,
		`{"results":[]} []`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, k uint8) {
		kind := searchKind(k % 3)
		var got []entity
		p := pageReader{kind: kind, maxResults: 50, add: func(e entity) { got = append(got, e) }}
		next, err := p.read(body)
		if err != nil {
			if len(got) > 0 {
				t.Fatalf("a failed page handed on %d results", len(got))
			}
			return
		}
		for _, e := range got {
			if kind == searchAction && e.Name == "" || kind != searchAction && e.Type == "" {
				t.Fatalf("a result without a type or name in %q", body)
			}
		}
		results, nextToken, ok := refPage(body)
		if !ok {
			return
		}
		if len(results) != len(got) {
			t.Fatalf("%q: the client read %d results, the reference %d", body, len(got), len(results))
		}
		for i, r := range results {
			e := got[i]
			want := entity{Type: r["type"], ID: r["id"]}
			if kind == searchAction {
				want = entity{Name: r["name"]}
			}
			if e.Type != want.Type || e.ID != want.ID || e.Name != want.Name {
				t.Fatalf("%q: result %d is %+v to the client, %+v to the reference", body, i, e, want)
			}
		}
		if nextToken != next {
			t.Fatalf("%q: the next token differs", body)
		}
	})
}

// refPage reads a search page as the reference does: results, a list of
// objects whose type, id and name are strings when present, and the page's
// next_token, a string when present. ok is false when it does not read the
// body.
func refPage(body []byte) (results []map[string]string, nextToken string, ok bool) {
	doc, ok := refDoc(body)
	top, isObject := doc.(map[string]any)
	if !ok || !isObject || !namesOnce(body) {
		return nil, "", false
	}
	str := func(m map[string]any, name string) (string, bool) {
		s, isString := m[name].(string)
		return s, isString || m[name] == nil
	}
	list, isList := top["results"].([]any)
	if top["results"] != nil && !isList {
		return nil, "", false
	}
	for _, r := range list {
		m, ok := object(r)
		if !ok {
			return nil, "", false
		}
		fields := map[string]string{}
		for _, name := range []string{"type", "id", "name"} {
			if fields[name], ok = str(m, name); !ok {
				return nil, "", false
			}
		}
		results = append(results, fields)
	}
	page, ok := object(top["page"])
	if !ok {
		return nil, "", false
	}
	if nextToken, ok = str(page, "next_token"); !ok {
		return nil, "", false
	}
	return results, nextToken, true
}

// namesOnce reports whether no object in body, valid JSON, names a member
// twice.
func namesOnce(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object, name bool
		seen         map[string]bool
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return true
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].name {
			if name, ok := tok.(string); ok {
				if stack[n-1].seen[name] {
					return false
				}
				stack[n-1].seen[name], stack[n-1].name = true, false
				continue
			}
		}
		d, _ := tok.(json.Delim)
		if n := len(stack); n > 0 && stack[n-1].object && d != '}' {
			stack[n-1].name = true
		}
		switch d {
		case '{':
			stack = append(stack, &frame{object: true, name: true, seen: map[string]bool{}})
		case '[':
			stack = append(stack, &frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		}
	}
}
