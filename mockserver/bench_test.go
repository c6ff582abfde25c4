package mockserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// benchBody asks for three pairs of a subject with roles from two
// organizations.
const benchBody = `{"clientId":"orders-api","resources":[{"name":"orders","scopes":["read","write"]},{"name":"invoices","scopes":["read"]}],"context":{"attributes":{"method":"GET","path":"/orders/1"}}}`

// fixedDecision is what the baseline handler answers.
const fixedDecision = `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"write","status":"GRANT"},{"resource":"invoices","scope":"read","status":"DENY"}]}` + "\n"

// baseline is the least a net/http decision handler can do: read the body,
// answer a fixed decision.
var baseline = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, fixedDecision)
})

// BenchmarkDecision measures decisions per second of the authorize handler
// next to the baseline, in process (httptest.NewRecorder) and over loopback
// with keep-alive. The ratio of the two ns/op is the handler's cost.
func BenchmarkDecision(b *testing.B) {
	const base = "http://example.com"
	srv, err := mockserver.New(mockserver.WithFixture(decisionFixture()), mockserver.WithIssuer(base))
	require.NoError(b, err)
	tok, err := srv.IssueToken("acme", "carol")
	require.NoError(b, err)

	inProcess := func(h http.Handler) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, base+authorizePath, strings.NewReader(benchBody))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		}
	}
	b.Run("in-process/mockserver", inProcess(srv))
	b.Run("in-process/baseline", inProcess(baseline))

	loopback := func(url, token string, client *http.Client) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			body := []byte(benchBody)
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPost, url+authorizePath, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				if err := drainOK(client.Do(req)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		}
	}
	ms := mockservertest.Start(b, mockserver.WithFixture(decisionFixture()))
	b.Run("loopback/mockserver", loopback(ms.URL, ms.Token("acme", "carol"), ms.Client()))
	hs := httptest.NewServer(baseline)
	b.Cleanup(hs.Close)
	b.Run("loopback/baseline", loopback(hs.URL, tok, hs.Client()))

	// Throughput: many requests in flight at once from one shared
	// keep-alive client, so that both cores stay busy (client and server
	// share them). decisions/s is the figure to compare.
	parallel := func(url, token string) func(b *testing.B) {
		return func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			b.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			body := []byte(benchBody)
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, err := http.NewRequest(http.MethodPost, url+authorizePath, bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/json")
					if err := drainOK(client.Do(req)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		}
	}
	b.Run("loopback-parallel/mockserver", parallel(ms.URL, ms.Token("acme", "carol")))
	b.Run("loopback-parallel/baseline", parallel(hs.URL, tok))
}

// drainOK reads and closes the body of a response to a request that must
// answer 200, and returns the request's error or one naming the status.
func drainOK(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
