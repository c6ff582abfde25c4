package events

import (
	"strconv"
	"sync"
	"time"
)

// Kind names what happened to a token. The zero Kind is not a valid event
// kind; its String is "Kind(0)".
type Kind int

const (
	// TokenSet reports that a new access token was configured.
	TokenSet Kind = iota + 1
	// TokenExpired reports that the gateway answered 401 to a token, so the
	// token is no longer valid.
	TokenExpired
	// TokenCleared reports that the token was removed explicitly (logout or
	// revocation).
	TokenCleared
)

// String returns the event name used by the service specification:
// "tokenSet", "tokenExpired" or "tokenCleared", and "Kind(n)" for any other
// value.
func (k Kind) String() string {
	switch k {
	case TokenSet:
		return "tokenSet"
	case TokenExpired:
		return "tokenExpired"
	case TokenCleared:
		return "tokenCleared"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one token lifecycle event. It never carries the token itself.
type Event struct {
	// Kind says what happened.
	Kind Kind
	// Time is when it happened. Emit fills it with time.Now when it is zero.
	Time time.Time
	// TokenType is the authorization scheme of the token concerned, "Bearer"
	// or "DPoP"; empty when unknown.
	TokenType string
	// Err is the reason for a TokenExpired event (the gateway's refusal);
	// nil for the other kinds.
	Err error
}

// Handler receives events. It runs on the goroutine that emitted the event
// and should return promptly; it may call back into the code that emitted it.
type Handler func(Event)

// Emitter fans events out to subscribed handlers. The zero value is ready to
// use and recovers handler panics silently; use [NewEmitter] to be told about
// them. An Emitter is safe for concurrent use and must not be copied after
// first use.
type Emitter struct {
	onPanic func(Event, any)

	mu     sync.Mutex
	nextID uint64
	subs   []subscription
}

type subscription struct {
	id uint64
	h  Handler
}

// NewEmitter returns an empty Emitter. onPanic, when not nil, is called with
// the event and the recovered value each time a handler panics (for logging);
// a panic inside onPanic itself is recovered and dropped.
func NewEmitter(onPanic func(ev Event, recovered any)) *Emitter {
	return &Emitter{onPanic: onPanic}
}

// Subscribe appends h to the handlers that receive later events and returns
// a function that removes it again. The returned function is idempotent and
// safe to call from any goroutine, including from inside a handler; an Emit
// already under way may still deliver to h once. A nil h is ignored and the
// returned function does nothing.
func (e *Emitter) Subscribe(h Handler) (unsubscribe func()) {
	if h == nil {
		return func() {}
	}
	e.mu.Lock()
	e.nextID++
	id := e.nextID
	e.subs = append(e.subs, subscription{id: id, h: h})
	e.mu.Unlock()

	var once sync.Once
	return func() {
		once.Do(func() { e.remove(id) })
	}
}

func (e *Emitter) remove(id uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, s := range e.subs {
		if s.id == id {
			// Build a new slice so that an Emit iterating over the old one
			// is unaffected.
			subs := make([]subscription, 0, len(e.subs)-1)
			subs = append(subs, e.subs[:i]...)
			e.subs = append(subs, e.subs[i+1:]...)
			return
		}
	}
}

// Emit delivers ev to every handler subscribed when Emit starts, one after
// the other in subscription order, on the calling goroutine, and returns
// when the last one has returned. No lock is held while a handler runs, so a
// handler may Subscribe, unsubscribe or Emit. A handler that panics is
// recovered and the remaining handlers still run. A zero ev.Time is set to
// time.Now().
func (e *Emitter) Emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	subs := e.subs // never modified in place, see remove and Subscribe
	e.mu.Unlock()
	for _, s := range subs {
		e.call(s.h, ev)
	}
}

func (e *Emitter) call(h Handler, ev Event) {
	defer func() {
		if r := recover(); r != nil && e.onPanic != nil {
			defer func() { _ = recover() }()
			e.onPanic(ev, r)
		}
	}()
	h(ev)
}
