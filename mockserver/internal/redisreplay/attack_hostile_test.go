package redisreplay

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostile serves one canned answer to every connection, after reading
// what the client sends; slow answers are dribbled byte by byte.
func hostile(t *testing.T, answer string, slow bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		var wg sync.WaitGroup
		defer func() { wg.Wait(); close(done) }()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				_, _ = r.Peek(1)
				for i := 0; i < len(answer); i++ {
					if _, err := c.Write([]byte{answer[i]}); err != nil {
						return
					}
					if slow {
						time.Sleep(50 * time.Millisecond)
					}
				}
				_, _ = io.Copy(io.Discard, r) // until the client closes
			})
		}
	}()
	return ln.Addr().String()
}

// TestAttackHostileRedis: garbage, huge, slow and misleading answers never
// yield first=true unless the three replies are right, never panic, and
// never hold Remember past its context.
func TestAttackHostileRedis(t *testing.T) {
	old := "+OK\r\n+OK\r\n$1\r\n0\r\n" // a marker at the epoch: the only way a hostile server makes a proof "first"
	cases := map[string]struct {
		answer string
		slow   bool
	}{
		"array":          {"*3\r\n+OK\r\n+OK\r\n+OK\r\n", false},
		"huge bulk":      {"$999999999999\r\n", false},
		"negative bulk":  {"$-5\r\n", false},
		"long line":      {"+" + strings.Repeat("A", 100000) + "\r\n", false},
		"no CRLF":        {"+OK\n+OK\n$1\n0\n", false},
		"RESP3 push":     {">2\r\n+a\r\n+b\r\n", false},
		"int for SET":    {":1\r\n+OK\r\n$1\r\n0\r\n", false},
		"bulk OK":        {"$2\r\nOK\r\n+OK\r\n$1\r\n0\r\n", false},
		"too few":        {"+OK\r\n", false},
		"slow dribble":   {old, true},
		"empty lines":    {"\r\n\r\n\r\n", false},
		"bulk no term":   {"$1\r\n0XX", false},
		"marker garbage": {"+OK\r\n+OK\r\n$3\r\n1e9\r\n", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := Open("redis://"+hostile(t, c.answer, c.slow), "")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			first, err := s.Remember(ctx, "k", time.Now().Add(2*time.Minute))
			took := time.Since(start)
			t.Logf("first=%v err=%v took=%v", first, err, took)
			if took > time.Second {
				t.Errorf("BREAK: Remember held %v past a 300ms context", took)
			}
			if first && name != "bulk OK" {
				t.Errorf("BREAK: hostile answer read as first")
			}
		})
	}
}
