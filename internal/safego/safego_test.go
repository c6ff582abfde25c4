package safego_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/safego"
)

// badText is a panic value whose text panics too.
type badText struct{}

func (badText) String() string { panic("no text") }

func TestCallRecoversAndRaiseRepeats(t *testing.T) {
	t.Parallel()
	require.Nil(t, safego.Call(func() {}), "a function that returns")
	require.NotPanics(t, func() { (*safego.Panic)(nil).Raise() }, "nothing to raise")

	errBug := errors.New("a bug")
	p := safego.Call(func() { panic(errBug) })
	require.NotNil(t, p)
	require.Equal(t, "a bug", p.Text())
	require.Contains(t, string(p.Stack), "safego_test", "the stack of the goroutine that panicked")
	require.PanicsWithValue(t, errBug, p.Raise, "the value itself, so that the caller recovers what it would have")

	require.NotPanics(t, func() { _ = safego.Call(func() { panic(badText{}) }).Text() }, "a value whose text panics")
	require.NotNil(t, safego.Call(func() { panic(nil) }), "panic(nil) is a panic too")
}
