// Package safego holds the one rule for user code the clients run on
// goroutines of their own: no user code (a RoundTripper given with
// WithHTTPClient, an OpenTelemetry SDK, a slog handler, a DPoP key, an
// Invalidator) runs on a goroutine the client owns without a recover,
// since nothing else could recover its panic and the whole process would
// end. What the recovered panic becomes is the owner's to say:
//
//   - work done for a caller who waits for it (the chunks of one call)
//     raises the panic again on the caller's goroutine once the work has
//     ended (Panic.Raise), so that the caller's own recover (the
//     middleware's, the gRPC interceptors') answers it as it answers the
//     same panic of a one-chunk call;
//   - work the caller may no longer wait for (a DPoP signature) fails its
//     caller closed;
//   - background work (the invalidation channel) logs it, without any
//     token, and goes on.
//
// Whatever a request reserves (a breaker's probe, a flight's leadership,
// a slot, a counter of requests under way) is released by a defer, so
// that a panic, recovered here or by the caller, leaves nothing reserved.
package safego

import (
	"fmt"
	"reflect"
	"runtime/debug"
)

// Panic is a panic recovered from user code: its value and the stack of
// the goroutine that raised it.
type Panic struct {
	Value any
	Stack []byte
}

// Call runs f and returns the panic it raised, recovered, or nil when f
// returned. A panic(nil) is returned as the *runtime.PanicNilError the
// runtime makes of it. f ending its goroutine (runtime.Goexit) is not a
// panic: Call does not return, and the goroutine's deferred calls run.
func Call(f func()) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Raise panics again with p's value, unchanged, on the calling goroutine,
// so that the caller recovers what it would have recovered had the work
// run on its own goroutine. It does nothing for a nil p.
func (p *Panic) Raise() {
	if p != nil {
		panic(p.Value)
	}
}

// Text is what p's value says, for a log line; a value whose String or
// Error method panics too is named by its type (Text).
func (p *Panic) Text() string { return Text(p.Value) }

// Text is what v says (fmt.Sprint), for a log line, without letting v's
// own code end the caller: a value whose String or Error method panics is
// named by its type. Use it for any value of the user's (an error an
// Invalidator returned) printed on a goroutine of the library's own.
func Text(v any) (text string) {
	defer func() {
		if recover() != nil {
			text = fmt.Sprintf("a %T whose text panicked", v)
		}
	}()
	return fmt.Sprint(v)
}

// IsNil reports whether v, a value the user gave, is nil or an interface
// holding a nil pointer, map, function, channel or slice (a typed nil,
// such as a nil *pep.Client): a wiring mistake to refuse before it panics.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
