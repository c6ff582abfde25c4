package mockserver

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

const benchAuthorizeBody = `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`

// BenchmarkAuthorizeBody compares decodeBody's reading of an authorize
// body (the scanner, then strictjson.Unmarshal where the scanner gives up)
// with strictjson.Unmarshal alone: on the plain body the scanner reads,
// and on one it gives up on at its last member (what a body the scanner
// does not know costs more: its cliff).
func BenchmarkAuthorizeBody(b *testing.B) {
	for _, body := range []struct{ name, text string }{
		{"plain", benchAuthorizeBody},
		{"unknown-last-member", benchAuthorizeBody[:len(benchAuthorizeBody)-1] + `,"trace":"x"}`},
	} {
		data := []byte(body.text)
		b.Run(body.name+"/scanner-then-unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var req authorizeRequest
				if !req.decodeFast(data) {
					if err := strictjson.Unmarshal(data, &req); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(body.name+"/unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var req authorizeRequest
				if err := strictjson.Unmarshal(data, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
