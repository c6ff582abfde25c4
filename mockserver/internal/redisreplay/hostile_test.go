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

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// hostile serves one canned answer to every connection, after reading
// what the client sends; slow answers are dribbled byte by byte.
func hostile(t *testing.T, answer string, slow bool) string {
	t.Helper()
	ln := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
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

// TestRememberRefusesHostileAnswers: garbage, huge, slow and misleading
// answers never yield first unless both replies are right (SET's OK, the
// marker's script answering a settled marker it did not just write),
// never panic, and never hold Remember past its context.
func TestRememberRefusesHostileAnswers(t *testing.T) {
	settled := "*2\r\n$1\r\n0\r\n$1\r\n0\r\n" // a marker at the epoch, kept: the only way a hostile server makes a proof "first"
	right := "+OK\r\n" + settled
	for _, c := range []struct {
		name   string
		answer string
		slow   bool
		first  bool
	}{
		{"right", right, false, true},
		{"bulk OK", "$2\r\nOK\r\n" + settled, false, true},
		{"array for SET", "*2\r\n$2\r\nOK\r\n$2\r\nOK\r\n" + settled, false, false},
		{"script began the keyspace now", "+OK\r\n*2\r\n$1\r\n0\r\n$1\r\n1\r\n", false, false},
		{"script array too long", "+OK\r\n*4\r\n$1\r\n0\r\n$1\r\n0\r\n$1\r\n0\r\n$1\r\n0\r\n", false, false},
		{"script generation not a number", "+OK\r\n*3\r\n$1\r\n0\r\n$1\r\n0\r\n$1\r\nx\r\n", false, false},
		{"script array of one", "+OK\r\n*1\r\n$1\r\n0\r\n", false, false},
		{"nested array", "+OK\r\n*2\r\n*1\r\n$1\r\n0\r\n$1\r\n0\r\n", false, false},
		{"script flag not 0 or 1", "+OK\r\n*2\r\n$1\r\n0\r\n$1\r\n2\r\n", false, false},
		{"script bulk for array", "+OK\r\n$1\r\n0\r\n", false, false},
		{"script error", "+OK\r\n-ERR INFO server answered no run_id\r\n", false, false},
		{"huge bulk", "$999999999999\r\n", false, false},
		{"negative bulk", "$-5\r\n", false, false},
		{"long line", "+" + strings.Repeat("A", 100000) + "\r\n", false, false},
		{"no CRLF", "+OK\n*2\n$1\n0\n$1\n0\n", false, false},
		{"RESP3 push", ">2\r\n+a\r\n+b\r\n", false, false},
		{"int for SET", ":1\r\n" + settled, false, false},
		{"too few", "+OK\r\n", false, false},
		{"slow dribble", right, true, false},
		{"empty lines", "\r\n\r\n\r\n", false, false},
		{"bulk no term", "$1\r\n0XX", false, false},
		{"marker garbage", "+OK\r\n*2\r\n$3\r\n1e9\r\n$1\r\n0\r\n", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testkit.Must(Open("redis://"+hostile(t, c.answer, c.slow), ""))(t)
			defer s.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			first, err := s.Remember(ctx, "k", time.Now().Add(2*time.Minute))
			require.Equal(t, c.first, first, "%v", err)
			if c.first {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if c.slow {
				require.ErrorIs(t, err, context.DeadlineExceeded, "held only until its context ends")
			}
		})
	}
}
