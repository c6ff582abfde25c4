//go:build linux

package main

import "syscall"

// smallSocket makes a client socket, before it connects, advertise a small
// segment size and receive window. The server's send buffer grows with the
// segment size (ten segments' worth to start), so both ends then buffer
// tens of kilobytes rather than megabytes: an answer of a few hundred
// kilobytes the client does not read cannot be written whole, and its
// request stays in progress.
func smallSocket(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536)
		if err == nil {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}
	}); cerr != nil {
		return cerr
	}
	return err
}
