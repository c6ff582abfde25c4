package frozentest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is a child process of the test binary, spoken to in lines on its
// stdin and stdout; its stderr is the test binary's. The test binary's
// TestMain runs the child's code when the environment variable it names
// is set (see StartChild).
type Child struct {
	cmd    *exec.Cmd
	stdin  io.Writer
	lines  *bufio.Scanner
	waited bool
}

// StartChild starts the test binary again, running no test, with
// envVar=name and env added to its environment: the test binary's TestMain
// runs child name when envVar is set. The child is killed when ctx ends,
// and when the test ends unless Wait was called.
func StartChild(ctx context.Context, t *testing.T, envVar, name string, env ...string) *Child {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envVar+"="+name), env...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &Child{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		if !k.waited {
			_ = cmd.Process.Kill() // a stopped process is killed too
			_ = cmd.Wait()
		}
	})
	return k
}

// Pid is the child's process id.
func (k *Child) Pid() int { return k.cmd.Process.Pid }

// Process is the child's process.
func (k *Child) Process() *os.Process { return k.cmd.Process }

// Next returns the child's next line, what it is expected to say; the test
// fails if the child ended instead.
func (k *Child) Next(t *testing.T, what string) string {
	t.Helper()
	if !k.lines.Scan() {
		t.Fatalf("the child ended before it said %s (its stderr is above): %v", what, k.lines.Err())
	}
	return k.lines.Text()
}

// Tell writes line to the child.
func (k *Child) Tell(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(k.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// Wait waits for the child to exit.
func (k *Child) Wait() error {
	k.waited = true
	return k.cmd.Wait()
}

// WaitStopped returns once process pid is stopped, as /proc says.
func WaitStopped(t *testing.T, pid int) {
	t.Helper()
	for range 5000 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// "pid (comm) state ...": comm may hold spaces and parentheses.
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(s[i:], ") T") {
			return
		}
		time.Sleep(time.Millisecond) // a poll's interval; the loop bounds the wait
	}
	t.Fatal("the child did not stop")
}

// StopSelf stops the whole process, as SIGSTOP from outside does, from the
// calling thread, which stops before it runs another instruction; it
// returns once the process is continued. It goes through the scheduler
// first: the runtime's monitor preempts a goroutine it has seen in the same
// scheduling round for 10 ms, and a freeze counts; after a warm-up of
// checks the monitor looks only every 10 ms or so, so it has not seen the
// round that begins here, and the caller is not preempted the moment it
// resumes.
func StopSelf() {
	runtime.Gosched()
	_, _, _ = syscall.RawSyscall(syscall.SYS_TGKILL, uintptr(syscall.Getpid()), uintptr(syscall.Gettid()), uintptr(syscall.SIGSTOP))
}
