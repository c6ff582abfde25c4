package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
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

// decisionJSON is a decision request body.
var decisionJSON = []byte(`{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`)

// BenchmarkUnmarshal measures what the rule costs a decision body:
// Unmarshal (the walk, then encoding/json) beside encoding/json alone,
// which enforces none of it.
func BenchmarkUnmarshal(b *testing.B) {
	data := decisionJSON
	for _, bm := range []struct {
		name      string
		unmarshal func([]byte, any) error
	}{
		{"strictjson", func(d []byte, v any) error { return Unmarshal(d, v) }},
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

// BenchmarkWalk measures the walk alone, the scanner under the rule, on a
// decision body: what Unmarshal adds to encoding/json.
func BenchmarkWalk(b *testing.B) {
	n := nodeOf(reflect.TypeFor[decisionBody]())
	w := new(walker)
	b.SetBytes(int64(len(decisionJSON)))
	b.ReportAllocs()
	for b.Loop() {
		w.start(decisionJSON)
		if err := w.check(n); err != nil {
			b.Fatal(err)
		}
		w.stop()
	}
}

// BenchmarkReader reads an authorize answer of 100 permissions as pep
// does: the Reader's whole path on a client's Check.
func BenchmarkReader(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"status":"GRANT","permissions":[`)
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"resource":"orders-%d","scope":"read","status":"GRANT","note":{"why":"role"}}`, i)
	}
	body.WriteString(`]}`)
	data := []byte(body.String())
	top, entry := []string{"status", "permissions"}, []string{"resource", "scope", "status"}
	r := New()
	var scratch []byte
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(data)
		n := 0
		err := r.Object()
		for i, ok := r.Next(top, &err); ok; i, ok = r.Next(top, &err) {
			if i == 0 {
				_, err = r.Bytes(&scratch)
				continue
			}
			err = r.Array()
			for r.More(&err) {
				err = r.Object()
				for _, ok := r.Next(entry, &err); ok; _, ok = r.Next(entry, &err) {
					_, err = r.Bytes(&scratch)
				}
				n++
			}
		}
		if err == nil {
			err = r.End()
		}
		if err != nil || n != 100 {
			b.Fatal(err, n)
		}
		r.Release()
	}
}
