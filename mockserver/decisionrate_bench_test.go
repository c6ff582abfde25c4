package mockserver_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
	"github.com/orgauthz/orgauthz/mockserver/mockservertest"
)

// BenchmarkDecisionRate measures the reference server's decisions per
// second over loopback HTTP/1.1 keep-alive next to a trivial handler that
// answers the same status, headers and body, served by an http.Server of
// the same configuration, at 1 and at 16 connections. The two are
// interleaved: each iteration is one phase against the reference server
// and one against the trivial handler, every connection sending a batch of
// requests in each, so that the load of a shared machine falls on both
// alike. It reports both rates and their ratio (ratio = reference /
// trivial; 1 is no cost at all). Take medians over -count rounds
// (BENCHMARKS.md).
func BenchmarkDecisionRate(b *testing.B) {
	ms := mockservertest.Start(b, mockserver.WithFixture(decisionFixture()))
	token := ms.Token("acme", "carol")
	body := []byte(benchBody)

	// The trivial handler answers what the reference server answers.
	resp, err := post(ms.Client(), ms.URL, token, body)
	require.NoError(b, err)
	answer, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode)
	header := resp.Header.Clone()
	header.Del("Date") // net/http adds its own
	trivial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(answer)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	hs := &http.Server{Handler: trivial, ReadHeaderTimeout: 10 * time.Second} // as mockservertest's
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	trivialURL := "http://" + ln.Addr().String()

	for _, conns := range []int{1, 16} {
		b.Run("conns="+strconv.Itoa(conns), func(b *testing.B) {
			const batch = 32 // requests per connection per phase
			clients := func() *http.Client {
				tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
				b.Cleanup(tr.CloseIdleConnections)
				return &http.Client{Transport: tr}
			}
			msClient, trivialClient := clients(), clients()
			var msCPU, trivialCPU time.Duration
			phase := func(client *http.Client, url string, cpu *time.Duration) time.Duration {
				start, startCPU := time.Now(), testkit.ProcessCPU(b)
				var wg sync.WaitGroup
				for range conns {
					wg.Go(func() {
						for range batch {
							if err := drainOK(post(client, url, token, body)); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				*cpu += testkit.ProcessCPU(b) - startCPU
				return time.Since(start)
			}
			phase(msClient, ms.URL, new(time.Duration)) // open the connections
			phase(trivialClient, trivialURL, new(time.Duration))
			var msTime, trivialTime []time.Duration
			b.ResetTimer()
			for b.Loop() {
				msTime = append(msTime, phase(msClient, ms.URL, &msCPU))
				trivialTime = append(trivialTime, phase(trivialClient, trivialURL, &trivialCPU))
			}
			perPhase := float64(conns * batch)
			sum := func(ds []time.Duration) float64 {
				var t time.Duration
				for _, d := range ds {
					t += d
				}
				return t.Seconds()
			}
			msRate, trivialRate := perPhase*float64(len(msTime))/sum(msTime), perPhase*float64(len(trivialTime))/sum(trivialTime)
			b.ReportMetric(msRate, "decisions/s")
			b.ReportMetric(trivialRate, "trivial/s")
			b.ReportMetric(msRate/trivialRate, "ratio")
			// The median of the phases' ratios resists a burst of load
			// on one phase of the pair.
			ratios := make([]float64, len(msTime))
			for i := range msTime {
				ratios[i] = trivialTime[i].Seconds() / msTime[i].Seconds()
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
			// CPU time of the process (client and server) per decision:
			// what a dedicated machine turns into decisions/s, less
			// disturbed than wall time by other processes' load.
			b.ReportMetric(float64(trivialCPU)/float64(msCPU), "cpu-ratio")
		})
	}
}

// post sends one decision request.
func post(client *http.Client, url, token string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url+authorizePath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}
