// Package events delivers token lifecycle events: a token was set, the
// gateway refused it (expired), or it was cleared.
//
// An [Emitter] holds an ordered list of [Handler] values and a queue of
// events. Events are delivered one at a time, in the order they were queued,
// each to every handler in subscription order; an event emitted by a handler
// waits until the current event has reached every handler, so all handlers
// see the same order. The pep client queues an event together with the
// change it reports ([Emitter.Enqueue], under its own lock) and delivers it
// after releasing its locks ([Emitter.Deliver]), so a handler may call back
// into the client (the usual answer to [TokenExpired] is SetToken with a
// fresh token). Delivery is bounded by the caller's context: a slow handler
// finishes on its own goroutine rather than hold the call that caused the
// event past its deadline. A handler that panics is recovered: later
// handlers still run and the emitter stays usable. One that ends its
// goroutine (runtime.Goexit, as t.Fatal does) cannot be recovered, but the
// delivery resumes on a new goroutine with the next handler of the same
// event: an event counts as delivered only once its last handler returned.
//
// The package imports only the standard library.
package events
