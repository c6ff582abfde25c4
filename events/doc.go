// Package events delivers token lifecycle events: a token was set, the
// gateway refused it (expired), or it was cleared.
//
// An [Emitter] holds an ordered list of [Handler] values. [Emitter.Emit] runs
// them synchronously, in subscription order, on the goroutine that emits; the
// pep client emits only after releasing its own locks, so a handler may call
// back into the client (the usual answer to [TokenExpired] is SetToken with a
// fresh token). A handler that panics is recovered: later handlers still run
// and the emitter stays usable.
//
// The package imports only the standard library.
package events
