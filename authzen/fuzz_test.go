package authzen

import (
	"bytes"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// readNamesOnce reports whether no object names a member the client reads
// (evaluations at the top, decision and context in an item) twice; other
// members may repeat, as the client ignores them. It walks the tokens
// itself, apart from the client's reader.
func readNamesOnce(body []byte) bool {
	d := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	type frame struct {
		object bool
		seen   map[string]bool
		name   bool // the next string token is a name
	}
	var stack []frame
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return true // the parsers themselves judge malformed input
		}
		k := tok.Kind()
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].name && k == '"' {
			name := tok.String()
			depth := n // 1: the top object, 3: an item
			if depth == 1 && name == "evaluations" || depth == 3 && (name == "decision" || name == "context") || depth == 1 && (name == "decision" || name == "context") {
				if stack[n-1].seen[name] {
					return false
				}
				stack[n-1].seen[name] = true
			}
			stack[n-1].name = false
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object && k != '}' {
			stack[n-1].name = true // after this value, a name
			if k == '{' || k == '[' {
				stack[n-1].name = true
			}
		}
		switch k {
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

// refItems is an independent, strict reading of an Access Evaluations
// answer for the differential fuzz: jsonv2 into plain structs (member names
// case-sensitive, invalid UTF-8 refused, decision a JSON boolean), with
// readNamesOnce refusing a member it reads named twice. ok is false when the body is no valid answer for n items.
func refItems(body []byte, n int) (allowed []bool, ok bool) {
	var ans struct {
		Evaluations *[]struct {
			Decision *bool          `json:"decision"`
			Context  map[string]any `json:"context"`
		} `json:"evaluations"`
	}
	if !readNamesOnce(body) || jsonv2.Unmarshal(body, &ans, jsontext.AllowDuplicateNames(true)) != nil || ans.Evaluations == nil || len(*ans.Evaluations) != n {
		return nil, false
	}
	for _, it := range *ans.Evaluations {
		allowed = append(allowed, it.Decision != nil && *it.Decision && it.Context["error"] == nil)
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
		var ans struct {
			Decision *bool          `json:"decision"`
			Context  map[string]any `json:"context"`
		}
		if !readNamesOnce(body) || jsonv2.Unmarshal(body, &ans, jsontext.AllowDuplicateNames(true)) != nil || ans.Decision == nil || !*ans.Decision || ans.Context["error"] != nil {
			t.Fatalf("the client allows %q, the reference does not", body)
		}
	})
}

// FuzzSearchPage: a search page the client reads is one an exact,
// duplicate-refusing reader (jsonv2 into a struct) reads the same, whenever
// that reader reads it at all (it also refuses duplicates of members the
// client skips); and the client never hands on a result without a type.
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
		var ref struct {
			Results []struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"results"`
			Page *struct {
				NextToken string `json:"next_token"`
			} `json:"page"`
		}
		if jsonv2.Unmarshal(body, &ref) != nil {
			return
		}
		if len(ref.Results) != len(got) {
			t.Fatalf("%q: the client read %d results, the reference %d", body, len(got), len(ref.Results))
		}
		for i, r := range ref.Results {
			e := got[i]
			want := entity{Type: r.Type, ID: r.ID}
			if kind == searchAction {
				want = entity{Name: r.Name}
			}
			if e.Type != want.Type || e.ID != want.ID || e.Name != want.Name {
				t.Fatalf("%q: result %d is %+v to the client, %+v to the reference", body, i, e, want)
			}
		}
		if ref.Page != nil && ref.Page.NextToken != next {
			t.Fatalf("%q: the next token differs", body)
		}
	})
}
