package testkit

import (
	"errors"
	"fmt"
	"testing"
)

// fatals records what Fatalf was told in place of failing the test.
type fatals struct {
	testing.TB
	said []string
}

func (f *fatals) Helper() {}
func (f *fatals) Fatalf(format string, args ...any) {
	f.said = append(f.said, fmt.Sprintf(format, args...))
}

// TestMustFailsOnAnError: Must and Must2 hand the values on when the error
// is nil and fail the test, saying the error and the caller's message,
// when it is not; every test that reads a value through them relies on it.
func TestMustFailsOnAnError(t *testing.T) {
	f := &fatals{TB: t}
	v := Must(7, nil)(f)
	a, b := Must2("a", 2, nil)(f, "unused")
	boom := errors.New("boom")
	Must(0, boom)(f)
	Must(0, boom)(f, "reading the key")
	Must2(0, 0, boom)(f, "proof %d", 3)
	got := fmt.Sprintf("%v %v %v %q", v, a, b, f.said)
	if want := `7 a 2 ["unexpected error: boom" "reading the key: unexpected error: boom" "proof 3: unexpected error: boom"]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
