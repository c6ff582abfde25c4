package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// decisionBody is a decision request as the reference server reads it.
type decisionBody struct {
	ClientID  string `json:"clientId"`
	Resources []struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	} `json:"resources"`
	Context *struct {
		Attributes *struct {
			Method string `json:"method"`
			Path   string `json:"path"`
		} `json:"attributes"`
	} `json:"context"`
}

// BenchmarkUnmarshal measures what the rule costs a decision body:
// Unmarshal (the walk, then json v2) beside json v2 alone and
// encoding/json alone, which enforce less of it.
func BenchmarkUnmarshal(b *testing.B) {
	data := []byte(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`)
	for _, bm := range []struct {
		name      string
		unmarshal func([]byte, any) error
	}{
		{"strictjson", func(d []byte, v any) error { return Unmarshal(d, v) }},
		{"jsonv2", func(d []byte, v any) error { return jsonv2.Unmarshal(d, v) }},
		{"encoding-json", json.Unmarshal},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v decisionBody
				if err := bm.unmarshal(data, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHostileNames reads a 1 MiB object of distinct member names, the
// most names a body can hold: the rule must cost memory in proportion to
// the body (one index entry per name past the first 16), not a string per
// name.
func BenchmarkHostileNames(b *testing.B) {
	var names strings.Builder
	names.WriteString(`{"clientId":"x"`)
	for i := 0; names.Len() < 1<<20; i++ {
		fmt.Fprintf(&names, `,"k%d":0`, i)
	}
	names.WriteString(`}`)
	data := []byte(names.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v decisionBody
		if err := Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}
