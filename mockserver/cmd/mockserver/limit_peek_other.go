//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package main

import "syscall"

// bytesWaiting cannot peek at a socket here: it reports none, and the
// grace alone tells whether an idle or silent connection is quiet
// (limitListener).
func bytesWaiting(syscall.RawConn) bool { return false }
