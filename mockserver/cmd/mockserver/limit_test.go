package main

import (
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLimitReclaimsFromThePeerHoldingMost: the connection closed for a
// newcomer is one of the peer address holding the most idle and silent
// connections, its longest idle, else its oldest silent; a connection
// carrying a request is never closed, and one peer's many connections
// cost another peer's none. (All of the binary's own tests come from one
// address; this one builds the listener's state by hand.)
func TestLimitReclaimsFromThePeerHoldingMost(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.7")
	type conn struct {
		peer  netip.Addr
		state http.ConnState
	}
	for _, tc := range []struct {
		name  string
		conns []conn // in the order they entered their state
		want  int    // index of the victim, -1 for none
	}{
		{"the longest idle of the busiest peer, not the longest idle of all",
			[]conn{{a, http.StateIdle}, {b, http.StateIdle}, {b, http.StateIdle}}, 1},
		{"silent ones count towards what a peer holds",
			[]conn{{a, http.StateIdle}, {a, http.StateIdle}, {b, http.StateNew}, {b, http.StateNew}, {b, http.StateNew}}, 2},
		{"a peer's idle connection before its silent ones",
			[]conn{{b, http.StateNew}, {b, http.StateIdle}, {a, http.StateIdle}}, 1},
		{"the oldest silent one when none is idle",
			[]conn{{a, http.StateActive}, {b, http.StateNew}, {b, http.StateNew}}, 1},
		{"requests in progress count for nothing",
			[]conn{{a, http.StateIdle}, {b, http.StateActive}, {b, http.StateActive}, {b, http.StateHijacked}}, 0},
		{"none while every connection carries a request",
			[]conn{{a, http.StateActive}, {b, http.StateActive}, {b, http.StateHijacked}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimitListener(nil, len(tc.conns))
			conns := make([]*limitConn, len(tc.conns))
			for i, c := range tc.conns {
				p, q := net.Pipe()
				t.Cleanup(func() { p.Close(); q.Close() })
				l.seq++
				conns[i] = &limitConn{Conn: p, l: l, peer: c.peer, state: c.state, since: l.seq}
				l.conns[conns[i]] = struct{}{}
			}
			l.mu.Lock()
			v := l.victim()
			l.mu.Unlock()
			if tc.want < 0 {
				require.Nil(t, v)
				return
			}
			require.Same(t, conns[tc.want], v)
		})
	}
}
