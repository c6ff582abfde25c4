package events

import (
	"context"
	"slices"
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
	// or "DPoP"; empty when unknown, and for a client that sends no
	// credential (authzen.WithoutCredentials).
	TokenType string
	// Err is the reason for a TokenExpired event (the gateway's refusal);
	// nil for the other kinds.
	Err error
}

// Handler receives events. It should return promptly; it may call back into
// the code that emitted the event, including code that emits again.
type Handler func(Event)

// Emitter fans events out to subscribed handlers, one event at a time and in
// the order the events were queued: every handler sees every event in that
// order, even when a handler emits another event while one is being
// delivered (the new event waits for the current one to reach every
// handler). The zero value is ready to use and recovers handler panics
// silently; use [NewEmitter] to be told about them. An Emitter is safe for
// concurrent use and must not be copied after first use.
type Emitter struct {
	onPanic func(Event, any)

	mu     sync.Mutex
	nextID uint64
	subs   []subscription
	queue  []queued
	// delivering is set while some goroutine delivers the queue; it
	// delivers every event queued meanwhile, so there is only one at a
	// time and the order holds.
	delivering bool
	// next is the index, in queue[0].subs, of the next handler to call.
	// The event at queue[0] stays queued until its last handler has
	// returned, so a delivery resumed after a handler ended its goroutine
	// carries on with the same event's next handler.
	next int
}

type subscription struct {
	id uint64
	h  Handler
}

// queued is an event and the handlers subscribed when it was queued.
type queued struct {
	ev   Event
	subs []subscription
}

// NewEmitter returns an empty Emitter. onPanic, when not nil, is called with
// the event and the recovered value each time a handler panics (for logging);
// a panic inside onPanic itself is recovered and dropped.
func NewEmitter(onPanic func(ev Event, recovered any)) *Emitter {
	return &Emitter{onPanic: onPanic}
}

// Subscribe appends h to the handlers that receive later events and returns
// a function that removes it again. The returned function is idempotent and
// safe to call from any goroutine, including from inside a handler; an
// event queued before the removal may still reach h once. A nil h is ignored
// and the returned function does nothing.
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
			// Build a new slice so that queued events, which share the
			// old one, keep their handlers.
			e.subs = slices.Concat(e.subs[:i], e.subs[i+1:])
			return
		}
	}
}

// Emit queues ev and delivers the queue: Enqueue followed by
// Deliver(context.Background()).
func (e *Emitter) Emit(ev Event) {
	e.Enqueue(ev)
	e.Deliver(context.Background())
}

// Enqueue adds ev to the events awaiting delivery, for the handlers
// subscribed now, without running any handler; Deliver delivers it. Since
// it never runs a handler, Enqueue may be called with the caller's own
// locks held: that is how a caller makes the order of its events the order
// of the changes they report. A zero ev.Time is set to time.Now().
func (e *Emitter) Enqueue(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append(e.queue, queued{ev: ev, subs: e.subs})
}

// Deliver runs the handlers of every queued event, one event after the
// other, and returns when the queue is empty, or when ctx is done, whichever
// comes first: a delivery that ctx cuts short goes on without the caller,
// on a goroutine of its own, so a slow handler never holds a caller past its
// deadline. A context that can never be done (context.Background) makes the
// delivery run on the calling goroutine.
//
// When a delivery is already under way (on another goroutine, or further up
// this one's stack, as when a handler emits), Deliver returns at once and
// that delivery delivers the queued events after the one it is delivering.
// A handler that panics is recovered; later handlers still run. A handler
// that ends its goroutine (runtime.Goexit) ends the caller's too when the
// delivery runs on it; the delivery resumes on a new goroutine with the
// next handler of the same event.
func (e *Emitter) Deliver(ctx context.Context) {
	e.mu.Lock()
	if e.delivering || len(e.queue) == 0 {
		e.mu.Unlock()
		return
	}
	e.delivering = true
	e.mu.Unlock()
	drained := make(chan struct{})

	if ctx.Done() == nil {
		e.drain(drained)
		return
	}
	go e.drain(drained)
	select {
	case <-drained:
	case <-ctx.Done():
	}
}

// drain delivers the queue until it is empty, then closes drained. An
// event leaves the queue only once its last handler has returned. A handler
// that ends its goroutine (runtime.Goexit, as t.Fatal does) cannot be
// stopped, but the delivery goes on, on a new goroutine, from the next
// handler of the same event: the handlers after it still get that event,
// before any later one.
func (e *Emitter) drain(drained chan struct{}) {
	finished := false
	defer func() {
		if !finished {
			go e.drain(drained)
		}
	}()
	for {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.delivering = false
			e.queue = nil // let the backing array go
			e.next = 0
			e.mu.Unlock()
			finished = true
			close(drained)
			return
		}
		q := e.queue[0]
		if e.next >= len(q.subs) {
			// Every handler of this event has returned.
			e.queue[0] = queued{}
			e.queue = e.queue[1:]
			e.next = 0
			e.mu.Unlock()
			continue
		}
		s := q.subs[e.next]
		// Counted before the call: a handler that ends its goroutine
		// is not called again.
		e.next++
		e.mu.Unlock()
		e.call(s.h, q.ev)
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
