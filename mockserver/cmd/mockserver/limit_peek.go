//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package main

import (
	"errors"
	"syscall"
)

// bytesWaiting reports whether bytes from the peer wait in the socket of
// raw, not yet read: it peeks at one without waiting (MSG_PEEK,
// MSG_DONTWAIT). None waits when the socket is empty, at its end (the
// peer closed it, having sent nothing more) or broken, and when it is
// closed already.
func bytesWaiting(raw syscall.RawConn) bool {
	var (
		n   int
		err error
	)
	if cerr := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); cerr != nil {
		return false // closed: no request to lose
	}
	switch {
	case err == nil:
		return n > 0
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK):
		return false
	case errors.Is(err, syscall.EINTR):
		return true // not known: keep it
	}
	return false // reset or broken: nothing more will come
}
