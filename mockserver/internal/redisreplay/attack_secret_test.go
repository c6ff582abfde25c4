package redisreplay

import (
	"strings"
	"testing"
)

// TestAttackPasswordInOpenError: a -redis URL the parser refuses is quoted
// whole in the error (url.Parse's *url.Error), password included; the
// binary prints that error ("-redis: redis URL: parse ...") to stderr.
func TestAttackPasswordInOpenError(t *testing.T) {
	for _, raw := range []string{
		"redis://user:s3cr3tPW%zz@127.0.0.1:6379",
		"redis://user:s3cr3tPW@127.0.0.1:6379/%zz",
		"redis://user:s3cr3tPW@[::1:6379",
		"redis://user:s3cr3tPW@127.0.0.1:port",
		"redis ://user:s3cr3tPW@127.0.0.1:6379",
		"redis://user:s3cr3tPW@127.0.0.1:6379/0 1",
	} {
		_, err := Open(raw, "")
		if err != nil && strings.Contains(err.Error(), "s3cr3tPW") {
			t.Errorf("BREAK: Open(%q): the error holds the password: %v", raw, err)
		} else {
			t.Logf("Open(%q): %v", raw, err)
		}
	}
}
