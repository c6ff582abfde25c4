package redisreplay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// conn is one connection speaking RESP2.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

// reply is one RESP2 reply: a simple string or bulk string (s), a null
// bulk string (null), an integer (as s), an error reply (err), or an array
// of at most maxArray strings (arr, non-nil: the marker's and the one-time
// record's scripts' answers).
type reply struct {
	s    string
	null bool
	err  error
	arr  []string
}

// StringSlice is the reply as replaymarker.Answer: its array's elements,
// or its error.
func (r reply) StringSlice() ([]string, error) { return r.arr, r.err }

// maxArray bounds the elements of an array reply the store reads (the
// marker script's three).
const maxArray = 3

// do writes cmds in one go and reads one reply each, within ctx: its
// deadline becomes the connection's, and its cancellation ends the wait.
// An error means the connection is out of step and must be closed; an
// error reply of the server is in its reply.
func (c *conn) do(ctx context.Context, cmds ...[]string) (replies []reply, err error) {
	deadline, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() && err == nil {
			err = fmt.Errorf("redis: %w", context.Cause(ctx)) // the deadline may have cut the reply
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			err = fmt.Errorf("redis: %w (%w)", context.Cause(ctx), err)
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The connection's only deadline is ctx's: the network poller
			// can see it pass before ctx's own timer has fired, so say
			// which deadline it was.
			err = fmt.Errorf("redis: %w (%w)", context.DeadlineExceeded, err)
		}
	}()
	for _, cmd := range cmds {
		c.w.WriteString("*" + strconv.Itoa(len(cmd)) + "\r\n")
		for _, a := range cmd {
			c.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
		}
	}
	if err := c.w.Flush(); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	replies = make([]reply, len(cmds))
	for i := range replies {
		if replies[i], err = c.read(); err != nil {
			return nil, err
		}
	}
	return replies, nil
}

// errProtocol is the error of a reply the client does not understand.
var errProtocol = errors.New("redis: protocol error")

// read reads one reply: simple string, error, integer, bulk string, or an
// array of at most maxArray bulk strings.
func (c *conn) read() (reply, error) {
	line, err := c.line()
	if err != nil {
		return reply{}, err
	}
	if len(line) == 0 || line[0] != '*' {
		return c.scalar(line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > maxArray {
		return reply{}, fmt.Errorf("%w: bad array length", errProtocol)
	}
	r := reply{arr: make([]string, n)}
	for i := range r.arr {
		if line, err = c.line(); err != nil {
			return reply{}, err
		}
		e, err := c.scalar(line)
		switch {
		case err != nil:
			return reply{}, err
		case e.err != nil || e.null || len(line) == 0 || line[0] != '$':
			return reply{}, fmt.Errorf("%w: an array element is not a bulk string", errProtocol)
		}
		r.arr[i] = e.s
	}
	return r, nil
}

// scalar reads the reply that line begins: simple string, error, integer
// or bulk string.
func (c *conn) scalar(line string) (reply, error) {
	if len(line) == 0 {
		return reply{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	switch body := line[1:]; line[0] {
	case '+', ':':
		return reply{s: body}, nil
	case '-':
		return reply{err: errors.New("redis: " + body)}, nil
	case '$':
		n, err := strconv.Atoi(body)
		switch {
		case err != nil || n < -1:
			return reply{}, fmt.Errorf("%w: bad bulk length", errProtocol)
		case n == -1:
			return reply{null: true}, nil
		case n > maxBulk:
			return reply{}, fmt.Errorf("%w: bulk reply of %d bytes", errProtocol, n)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return reply{}, fmt.Errorf("redis: %w", err)
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return reply{}, fmt.Errorf("%w: bulk reply not terminated", errProtocol)
		}
		return reply{s: string(buf[:n])}, nil
	}
	return reply{}, fmt.Errorf("%w: unexpected reply type %q", errProtocol, line[0])
}

// maxLine bounds a reply line.
const maxLine = 512

// line reads one CRLF-terminated line of at most maxLine bytes.
func (c *conn) line() (string, error) {
	b, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(b) > maxLine {
		return "", fmt.Errorf("%w: line too long", errProtocol)
	}
	if err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	if len(b) < 2 || b[len(b)-2] != '\r' {
		return "", fmt.Errorf("%w: line not terminated by CRLF", errProtocol)
	}
	return string(b[:len(b)-2]), nil
}
