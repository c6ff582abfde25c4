package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The binary's own tests come from 127.0.0.1; the tests of sharing between
// addresses dial from 127.0.0.2 too (Linux routes all of 127.0.0.0/8 to
// the loopback interface), or build the listener's state by hand.

// hold adds to l a connection of addr in state s, as the latest to enter
// it, holding a slot.
func hold(t *testing.T, l *limitListener, addr netip.Addr, s http.ConnState) *limitConn {
	t.Helper()
	c := queue(t, l, addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting--
	l.open++
	l.enter(c, c.peer.list(s))
	return c
}

// queue adds to l a connection of addr waiting for a slot, without
// settling.
func queue(t *testing.T, l *limitListener, addr netip.Addr) *limitConn {
	t.Helper()
	p, q := net.Pipe()
	t.Cleanup(func() { p.Close(); q.Close() })
	l.mu.Lock()
	defer l.mu.Unlock()
	pr := l.peers[addr]
	if pr == nil {
		pr = &peer{addr: addr}
		l.peers[addr] = pr
	}
	c := &limitConn{Conn: p, l: l, peer: pr}
	l.enter(c, &pr.queued)
	l.waiting++
	return c
}

// TestLimitTakesTheCheapestSlotOfTheAddressHoldingMost: when every slot is
// taken, the connection closed for a newcomer is the cheapest to close (an
// idle one, then a silent one, then a request in progress, the one in
// progress longest) of the address holding the most; another address's
// silent connections and requests only if it holds at least two more than
// the newcomer's; and an address that has every connection competes only
// with itself, as a test suite does. Requests in progress used to count for nothing: one address could
// hold every slot with slow requests while every other waited.
func TestLimitTakesTheCheapestSlotOfTheAddressHoldingMost(t *testing.T) {
	a, b, n := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("203.0.113.9")
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	const (
		idle   = http.StateIdle
		silent = http.StateNew
		busy   = http.StateActive
	)
	type conn struct {
		addr  netip.Addr
		state http.ConnState
	}
	for _, tc := range []struct {
		name  string
		conns []conn // in the order they entered their state
		from  netip.Addr
		want  int // index of the connection closed, -1 when the newcomer waits
	}{
		{"the longest idle of the address holding most, not the longest idle of all",
			[]conn{{a, idle}, {b, idle}, {b, idle}}, n, 1},
		{"an idle connection before a silent one, whoever holds it",
			[]conn{{a, idle}, {b, silent}, {b, silent}, {b, silent}}, n, 0},
		{"an address's idle connection before its silent ones",
			[]conn{{b, silent}, {b, idle}, {a, idle}}, n, 1},
		{"the oldest silent one of the address holding most",
			[]conn{{a, busy}, {a, silent}, {b, busy}, {b, busy}, {b, silent}, {b, silent}}, n, 4},
		{"a silent connection before a request in progress",
			[]conn{{b, busy}, {b, busy}, {b, busy}, {a, silent}, {a, silent}}, n, 3},
		{"the request in progress longest of the address holding most",
			[]conn{{a, busy}, {b, busy}, {b, busy}, {b, busy}}, n, 1},
		{"one address holding every slot with requests in progress",
			[]conn{{b, busy}, {b, busy}, {b, busy}, {b, busy}}, n, 0},
		{"hijacked connections count as requests in progress",
			[]conn{{b, http.StateHijacked}, {b, busy}}, n, 0},
		{"not a request of an address holding only one more",
			[]conn{{a, busy}, {b, busy}, {b, busy}}, a, -1},
		{"not a silent connection of an address holding only one more",
			[]conn{{a, busy}, {b, busy}, {b, silent}}, a, -1},
		{"an idle connection of an address holding fewer",
			[]conn{{a, busy}, {a, busy}, {b, idle}}, a, 2},
		{"an address's own idle connection, whatever the others hold",
			[]conn{{a, busy}, {a, idle}, {b, busy}, {b, busy}, {b, busy}}, a, 1},
		{"an address's own silent connection",
			[]conn{{a, busy}, {a, silent}, {b, busy}, {b, busy}}, a, 1},
		{"an address that holds every slot competes only with itself",
			[]conn{{a, busy}, {a, busy}, {a, busy}}, a, -1},
		{"the newcomer of an address holding every slot takes its idle one",
			[]conn{{a, silent}, {a, busy}, {a, idle}}, a, 2},
		{"not a request of an address holding one, to a newcomer whose holds none",
			[]conn{{a, busy}, {b, busy}}, n, -1},
		{"IPv6 addresses of one /64 are different addresses",
			[]conn{{v6a, busy}, {v6a, busy}, {v6a, busy}}, v6b, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimitListener(nil, len(tc.conns))
			conns := make([]*limitConn, len(tc.conns))
			for i, c := range tc.conns {
				conns[i] = hold(t, l, c.addr, c.state)
			}
			l.mu.Lock()
			p := l.peers[tc.from]
			if p == nil {
				p = &peer{addr: tc.from}
			}
			v := l.victim(p)
			l.mu.Unlock()
			if tc.want < 0 {
				require.Nil(t, v)
				return
			}
			require.Same(t, conns[tc.want], v)
		})
	}
}

// TestLimitQueue: a connection that waits for a slot does not hold up
// another address's newcomer, a slot that comes free goes to the waiting
// address holding the fewest, and a full queue closes the newest waiting
// connection of the address with the most waiting. The listener used to
// wait for a slot inside Accept, so every later connection, whatever its
// address, waited behind the one waiting.
func TestLimitQueue(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.7")
	// accepted returns the connections Accept would return next.
	accepted := func(l *limitListener) []*limitConn {
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []*limitConn
		for _, c := range l.ready {
			if !c.gone {
				out = append(out, c)
			}
		}
		l.ready = nil
		return out
	}
	gone := func(l *limitListener, c *limitConn) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return c.gone
	}
	// arrive makes a connection of addr arrive, and returns it as the
	// listener keeps it, or nil when it was closed at once.
	arrive := func(l *limitListener, addr netip.Addr) *limitConn {
		p, q := net.Pipe()
		t.Cleanup(func() { p.Close(); q.Close() })
		l.arrive(p, addr)
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, c := range l.ready {
			if c.Conn == p {
				return c
			}
		}
		if pr := l.peers[addr]; pr != nil {
			for c := pr.queued.head; c != nil; c = c.next {
				if c.Conn == p {
					return c
				}
			}
		}
		return nil
	}

	t.Run("a waiting connection does not hold up another address's", func(t *testing.T) {
		l := newLimitListener(nil, 2)
		a1, a2 := arrive(l, a), arrive(l, a)
		require.Equal(t, []*limitConn{a1, a2}, accepted(l))
		l.track(a1, http.StateActive)
		l.track(a2, http.StateActive)
		a3 := arrive(l, a)
		require.Empty(t, accepted(l), "a holds every slot: its newcomer waits")
		b1 := arrive(l, b)
		require.Equal(t, []*limitConn{b1}, accepted(l), "b's newcomer is served past a's waiting one")
		require.True(t, gone(l, a1), "for the request of a in progress longest")
		require.NoError(t, a2.Close())
		require.Equal(t, []*limitConn{a3}, accepted(l), "a's waiting connection has the slot a gave back")
	})

	t.Run("a slot goes to the waiting address holding the fewest", func(t *testing.T) {
		l := newLimitListener(nil, 3)
		a1, a2, b1 := arrive(l, a), arrive(l, a), arrive(l, b)
		require.Len(t, accepted(l), 3)
		for _, c := range []*limitConn{a1, a2, b1} {
			l.track(c, http.StateActive)
		}
		a3 := arrive(l, a)
		b2 := arrive(l, b)
		require.Empty(t, accepted(l), "no address holds two more than another")
		require.NoError(t, b1.Close())
		require.Equal(t, []*limitConn{b2}, accepted(l), "b holds none now: its connection goes before a's older one")
		require.NoError(t, a1.Close())
		require.Equal(t, []*limitConn{a3}, accepted(l))
	})

	t.Run("a connection that no longer carries a request gives its slot", func(t *testing.T) {
		l := newLimitListener(nil, 1)
		a1 := arrive(l, a)
		require.Len(t, accepted(l), 1)
		l.track(a1, http.StateActive)
		a2 := arrive(l, a)
		require.Empty(t, accepted(l))
		l.track(a1, http.StateIdle)
		require.Equal(t, []*limitConn{a2}, accepted(l))
		require.True(t, gone(l, a1))
	})

	t.Run("a full queue closes the newest of the address with the most waiting", func(t *testing.T) {
		l := newLimitListener(nil, 1)
		l.waitMax = 2
		a1 := arrive(l, a)
		require.Len(t, accepted(l), 1)
		l.track(a1, http.StateActive)
		a2, a3 := arrive(l, a), arrive(l, a)
		b1 := arrive(l, b) // a holds only one: b waits too
		require.True(t, gone(l, a3))
		require.False(t, gone(l, a2))
		require.False(t, gone(l, b1))
		require.Nil(t, arrive(l, b), "b has the most waiting now: its newcomer is closed")
		require.False(t, gone(l, a2))
		require.False(t, gone(l, b1))
		require.NoError(t, a1.Close())
		require.Equal(t, []*limitConn{a2}, accepted(l), "a and b hold none: a's connection has waited longer")
	})
}

// TestRunNoAddressHoldsEverySlot: another address (127.0.0.1) is answered
// while one address (127.0.0.2) holds every -max-connections slot, however
// it holds them. Requests in progress could not be closed for a newcomer,
// so sending the headers of a POST to the token endpoint (whose handler
// reads the body before any authentication) and trickling the body, or
// pipelining requests and never reading the answers, held every slot until
// -read-timeout or -write-timeout passed (30 s and 90 s by default), and
// again after; and a connection waiting for a slot stopped every later one
// from being accepted. The request's deadline, well under the server's
// timeouts (ten minutes here), only turns such a wait into a failure;
// nothing here measures speed.
func TestRunNoAddressHoldsEverySlot(t *testing.T) {
	const slots = 4
	for _, tc := range []struct {
		name string
		// hold sends what holds one connection; it returns once the
		// connection's request is in progress, where that can be seen.
		hold  func(t *testing.T, conn net.Conn, addr, token string)
		extra int // connections 127.0.0.2 opens beyond the slots, which wait
	}{
		{"request bodies sent slowly", trickleBody, 0},
		{"request bodies sent slowly, and more waiting", trickleBody, 2 * slots},
		{"answers not read", unreadAnswers, 0},
		{"handlers running", slowDecision, 0},
		{"idle keep-alive connections", idleAfterRequest, 0},
		{"silent connections", func(*testing.T, net.Conn, string, string) {}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, stop := start(t, "-max-connections", fmt.Sprint(slots), "-admin-secret", "s3cret",
				"-read-header-timeout", "10m", "-read-timeout", "10m", "-write-timeout", "10m", "-idle-timeout", "10m")
			defer func() { require.NoError(t, stop()) }()
			addr := strings.TrimPrefix(base, "http://")
			token := adminToken(t, base, "s3cret")
			if tc.name == "handlers running" {
				setConfig(t, base, token, `{"decisionLatencyMs": 60000}`)
			}

			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Control: smallSocket}
			var held []net.Conn
			defer func() { // before stop, which would wait for their requests
				for _, c := range held {
					c.Close()
				}
			}()
			for i := range slots + tc.extra {
				conn, err := d.DialContext(t.Context(), "tcp", addr)
				require.NoError(t, err)
				held = append(held, conn)
				require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
				if i < slots {
					tc.hold(t, conn, addr, token)
				} else { // no answer can come: it waits for a slot
					_, err = io.WriteString(conn, tokenHead(addr))
					require.NoError(t, err)
				}
			}

			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c := &http.Client{Transport: checker.Transport(&http.Transport{DisableKeepAlives: true})}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/realms/master/.well-known/openid-configuration", nil)
			require.NoError(t, err)
			resp, err := c.Do(req)
			require.NoError(t, err, "another address is served while one holds every slot")
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

// tokenHead is the head of a token request whose body is 1000 bytes, sent
// once the server asks for it.
func tokenHead(addr string) string {
	return "POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: " + addr +
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n"
}

// trickleBody sends a token request's head and the start of its body.
func trickleBody(t *testing.T, conn net.Conn, addr, _ string) {
	t.Helper()
	_, err := io.WriteString(conn, tokenHead(addr))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, resp.StatusCode, "the handler reads the body: the request is in progress")
	_, err = io.WriteString(conn, "grant_type=")
	require.NoError(t, err)
}

// unreadAnswers pipelines requests for the OpenAPI document (240 KB
// each) and reads only the start of the first answer: the server is
// writing it, and on a small socket (smallSocket) cannot finish.
func unreadAnswers(t *testing.T, conn net.Conn, addr, _ string) {
	t.Helper()
	_, err := io.WriteString(conn, strings.Repeat("GET /openapi.json HTTP/1.1\r\nHost: "+addr+"\r\n\r\n", 8))
	require.NoError(t, err)
	status := make([]byte, len("HTTP/1.1 200"))
	_, err = io.ReadFull(conn, status)
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200", string(status), "the answer is being written: the request is in progress")
}

// slowDecision sends a decision request that the configured latency holds
// in its handler.
func slowDecision(t *testing.T, conn net.Conn, addr, token string) {
	t.Helper()
	body := `{"clientId":"x","resources":[{"name":"r"}],"context":{}}`
	_, err := io.WriteString(conn, "POST /realms/master/authorization-decision-provider/authorize HTTP/1.1\r\nHost: "+addr+
		"\r\nAuthorization: Bearer "+token+"\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(body))+
		"\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, resp.StatusCode, "the handler reads the body: the request is in progress")
	_, err = io.WriteString(conn, body)
	require.NoError(t, err)
}

// idleAfterRequest sends a request, reads its answer and keeps the
// connection open.
func idleAfterRequest(t *testing.T, conn net.Conn, addr, _ string) {
	t.Helper()
	_, err := io.WriteString(conn, "GET /realms/master/.well-known/openid-configuration HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.False(t, resp.Close, "the connection is kept alive")
}

// setConfig changes the server's configuration with token, a
// platform-admin token.
func setConfig(t *testing.T, base, token, patch string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPatch, base+"/admin/config", strings.NewReader(patch))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
