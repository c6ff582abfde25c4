package mockserver_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// BenchmarkDecisionHandler measures what the reference server does for one
// decision, from its ServeHTTP to its last byte written, next to a trivial
// handler that reads the body and answers the same status, headers and
// bytes (BenchmarkDecisionRate's), both in process on the same request
// with a writer that keeps nothing. It spends nothing on the request's
// making or the answer's recording beyond a copy of one request, so that
// its instruction count is the server's own: the setup is deterministic
// (a key seed, so no random RSA key), and
//
//	valgrind --tool=callgrind ./mockserver.test -test.run '^$' \
//	  -test.bench 'BenchmarkDecisionHandler/mockserver$' -test.benchtime 12000x
//
// less the same at 2000x, over 10000, is the instructions a decision
// takes, which other tenants of a machine do not move (BENCHMARKS.md).
func BenchmarkDecisionHandler(b *testing.B) {
	const base = "http://example.com"
	srv, err := mockserver.New(mockserver.WithFixture(decisionFixture()), mockserver.WithIssuer(base),
		mockserver.WithKeySeed([]byte("decision-handler-benchmark-seed")))
	require.NoError(b, err)
	tok, err := srv.IssueToken("acme", "carol")
	require.NoError(b, err)

	tmpl := httptest.NewRequest(http.MethodPost, base+authorizePath, nil)
	tmpl.Header.Set("Authorization", "Bearer "+tok)
	tmpl.Header.Set("Content-Type", "application/json")
	tmpl.ContentLength = int64(len(benchBody))
	body := strings.NewReader(benchBody)
	serve := func(h http.Handler, w *discardWriter) {
		body.Reset(benchBody)
		req := *tmpl // the handler may set its Body and path values
		req.Body = io.NopCloser(body)
		w.reset()
		h.ServeHTTP(w, &req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}

	// The trivial handler answers what the reference server answers.
	first := &discardWriter{}
	serve(srv, first)
	header := first.header.Clone()
	answer := bytes.Clone(first.body)
	trivial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
	})

	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"mockserver", srv}, {"trivial", trivial}} {
		b.Run(h.name, func(b *testing.B) {
			w := &discardWriter{}
			b.ReportAllocs()
			for b.Loop() {
				serve(h.h, w)
			}
		})
	}

	// The same over loopback, one connection, client and server in this
	// process: what BenchmarkDecisionRate times, one side at a time, so
	// that callgrind counts each side's instructions per request.
	ms := mockservertest.Start(b, mockserver.WithFixture(decisionFixture()),
		mockserver.WithKeySeed([]byte("decision-handler-benchmark-seed")))
	msToken := ms.Token("acme", "carol")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	hs := &http.Server{Handler: trivial, ReadHeaderTimeout: 10 * time.Second} // as mockservertest's
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	for _, side := range []struct{ name, url string }{{"loopback/mockserver", ms.URL}, {"loopback/trivial", "http://" + ln.Addr().String()}} {
		b.Run(side.name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
			b.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			reqBody := []byte(benchBody)
			b.ReportAllocs()
			for b.Loop() {
				if err := drainOK(post(client, side.url, msToken, reqBody)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps the status, a header map
// it clears between requests, and the last body written.
type discardWriter struct {
	header http.Header
	status int
	body   []byte
}

func (w *discardWriter) reset() {
	if w.header == nil {
		w.header = http.Header{}
	}
	clear(w.header)
	w.status = 0
	w.body = w.body[:0]
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}
