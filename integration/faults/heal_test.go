package faults_test

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// blocked says whether a goroutine whose stack has fn is blocked sending
// on a channel: the goroutine dump is the only place Toxiproxy's state
// shows.
func blocked(fn string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[chan send") && strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

// TestHealWithAStuckToxic: the suite takes a toxic away while the
// toxic's goroutine is blocked sending, and heal returns. Toxiproxy's
// RemoveToxic, which the suite called before, takes the proxy's toxic
// collection's lock and waits for the toxic to take an interrupt, which a
// toxic blocked sending a chunk does only once the chunk is taken: it hung
// the suite to its 10-minute timeout (Shopify/toxiproxy#760; there the
// chunk's taker is the link's writer, which waits for the same lock to drop
// its link once its client has gone). Here the taker is a second toxic,
// which holds its own chunk for an hour: the state lasts.
func TestHealWithAStuckToxic(t *testing.T) {
	// The upstream streams to each connection until it is cut.
	up := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
	t.Cleanup(func() { _ = up.Close() })
	go func() {
		for {
			conn, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				chunk := make([]byte, 16<<10)
				for {
					if _, err := conn.Write(chunk); err != nil {
						return
					}
				}
			}()
		}
	}()

	tp := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(tp, "stream", "127.0.0.1:0", up.Addr().String())
	require.NoError(t, tp.Collection.Add(proxy, true))
	t.Cleanup(func() { _ = tp.Collection.Clear() })
	r := &rig{toxiprox: tp, proxy: proxy, tr: &http.Transport{}}
	require.NoError(t, r.addToxic("fault", "limit_data", "downstream", `{"bytes": 1073741824}`))
	require.NoError(t, r.addToxic("hold", "latency", "downstream", `{"latency": 3600000}`))

	client := testkit.Must(net.Dial("tcp", proxy.Listen))(t)
	defer client.Close()
	// The answer's first chunk waits in the latency toxic; limit_data
	// blocks sending the second to it.
	require.Eventually(t, func() bool { return blocked("toxics.(*LimitDataToxic).Pipe") }, time.Minute, 5*time.Millisecond, "the toxic blocks")

	healed := make(chan error, 1)
	go func() { healed <- r.heal() }()
	select {
	case err := <-healed:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a liveness bound: heal waits for nothing a toxic holds
		t.Fatal("heal is blocked behind the stuck toxic")
	}
	// The proxy on the same address has no toxic, and carries the stream.
	require.Empty(t, r.proxy.Toxics.GetToxicArray())
	require.Equal(t, proxy.Listen, r.proxy.Listen)
	again := testkit.Must(net.Dial("tcp", r.proxy.Listen))(t)
	defer again.Close()
	testkit.Must(io.ReadFull(again, make([]byte, 64<<10)))(t)
}
