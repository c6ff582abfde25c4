//go:build unix

package testkit

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU returns the CPU time (user and system) the process has used.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
