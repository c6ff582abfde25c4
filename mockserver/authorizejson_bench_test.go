package mockserver

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

const benchAuthorizeBody = `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`

// BenchmarkAuthorizeBody compares the fast reading of an authorize body
// with strictjson.Unmarshal, which reads every body the fast one gives up.
func BenchmarkAuthorizeBody(b *testing.B) {
	body := []byte(benchAuthorizeBody)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req authorizeRequest
			if !req.decodeFast(body) {
				b.Fatal("gave up")
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req authorizeRequest
			if err := strictjson.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
