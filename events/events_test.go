package events_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
)

func TestKindString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind events.Kind
		want string
	}{
		{"token set", events.TokenSet, "tokenSet"},
		{"token expired", events.TokenExpired, "tokenExpired"},
		{"token cleared", events.TokenCleared, "tokenCleared"},
		{"zero is not a kind", events.Kind(0), "Kind(0)"},
		{"unknown", events.Kind(42), "Kind(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.kind.String())
		})
	}
}

func TestEmitRunsHandlersInOrderOnCallingGoroutine(t *testing.T) {
	t.Parallel()
	var e events.Emitter // the zero value is usable
	var got []string
	e.Subscribe(func(ev events.Event) { got = append(got, "first:"+ev.Kind.String()) })
	e.Subscribe(func(ev events.Event) { got = append(got, "second:"+ev.Kind.String()) })

	// No synchronisation is needed to read got: Emit returns only after the
	// handlers ran on this goroutine.
	e.Emit(events.Event{Kind: events.TokenSet})
	e.Emit(events.Event{Kind: events.TokenCleared})
	assert.Equal(t, []string{
		"first:tokenSet", "second:tokenSet",
		"first:tokenCleared", "second:tokenCleared",
	}, got)
}

// TestEmitPassesTheEvent: a handler gets the event as emitted, its time
// kept, or now when it has none.
func TestEmitPassesTheEvent(t *testing.T) {
	t.Parallel()
	cause := errors.New("refused")
	fixed := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var e events.Emitter
	var got []events.Event
	e.Subscribe(func(ev events.Event) { got = append(got, ev) })
	e.Emit(events.Event{Kind: events.TokenExpired, Time: fixed, TokenType: "Bearer", Err: cause})
	e.Emit(events.Event{Kind: events.TokenExpired, TokenType: "Bearer", Err: cause})
	require.Len(t, got, 2)
	for _, ev := range got {
		assert.Equal(t, events.TokenExpired, ev.Kind)
		assert.Equal(t, "Bearer", ev.TokenType)
		require.ErrorIs(t, ev.Err, cause)
	}
	assert.Equal(t, fixed, got[0].Time, "an explicit time is kept")
	assert.WithinDuration(t, time.Now(), got[1].Time, time.Minute, "a zero time is filled with now")
}

func TestPanickingHandlerDoesNotStopOthers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		emitter     func(report func(events.Event, any)) *events.Emitter
		wantReports int
	}{
		{
			name:        "zero value recovers silently",
			emitter:     func(func(events.Event, any)) *events.Emitter { return &events.Emitter{} },
			wantReports: 0,
		},
		{
			name:        "NewEmitter reports the panic",
			emitter:     events.NewEmitter,
			wantReports: 1,
		},
		{
			name: "a panicking report is recovered too",
			emitter: func(report func(events.Event, any)) *events.Emitter {
				return events.NewEmitter(func(ev events.Event, r any) {
					report(ev, r)
					panic("report failed")
				})
			},
			wantReports: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var reports []any
			e := tt.emitter(func(ev events.Event, r any) {
				assert.Equal(t, events.TokenExpired, ev.Kind)
				reports = append(reports, r)
			})
			var after int
			e.Subscribe(func(events.Event) { panic("handler bug") })
			e.Subscribe(func(events.Event) { after++ })

			require.NotPanics(t, func() { e.Emit(events.Event{Kind: events.TokenExpired}) })
			require.NotPanics(t, func() { e.Emit(events.Event{Kind: events.TokenExpired}) })
			assert.Equal(t, 2, after, "the handler after the panicking one runs every time")
			assert.Len(t, reports, 2*tt.wantReports)
			for _, r := range reports {
				assert.Equal(t, "handler bug", r)
			}
		})
	}
}

// TestUnsubscribe: a removed handler is no longer called, the others are;
// unsubscribing again does nothing.
func TestUnsubscribe(t *testing.T) {
	t.Parallel()
	var e events.Emitter
	var counts [3]int
	e.Subscribe(func(events.Event) { counts[0]++ })
	unsubB := e.Subscribe(func(events.Event) { counts[1]++ })
	e.Subscribe(func(events.Event) { counts[2]++ })
	e.Emit(events.Event{Kind: events.TokenSet})
	unsubB()
	unsubB()
	e.Emit(events.Event{Kind: events.TokenSet})
	assert.Equal(t, [3]int{2, 1, 2}, counts)
}

func TestHandlerMayCallBackIntoEmitter(t *testing.T) {
	t.Parallel()
	var e events.Emitter
	var got []string
	var unsub func()
	unsub = e.Subscribe(func(ev events.Event) {
		got = append(got, "first:"+ev.Kind.String())
		if ev.Kind == events.TokenExpired {
			// The usual reaction: set a new token, which emits again,
			// and stop listening. None of this may deadlock.
			unsub()
			e.Subscribe(func(ev events.Event) { got = append(got, "second:"+ev.Kind.String()) })
			e.Emit(events.Event{Kind: events.TokenSet})
		}
	})
	e.Emit(events.Event{Kind: events.TokenExpired})
	assert.Equal(t, []string{"first:tokenExpired", "second:tokenSet"}, got)
}

func TestNilHandlerIgnored(t *testing.T) {
	t.Parallel()
	var e events.Emitter
	unsub := e.Subscribe(nil)
	require.NotPanics(t, func() {
		e.Emit(events.Event{Kind: events.TokenSet})
		unsub()
	})
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	e := events.NewEmitter(nil)
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				unsub := e.Subscribe(func(events.Event) {
					mu.Lock()
					total++
					mu.Unlock()
				})
				e.Emit(events.Event{Kind: events.TokenSet})
				unsub()
			}
		})
	}
	wg.Wait()
	// Each Emit reaches at least the emitting goroutine's own handler.
	assert.GreaterOrEqual(t, total, 800)
	mu.Lock()
	before := total
	mu.Unlock()
	e.Emit(events.Event{Kind: events.TokenSet})
	assert.Equal(t, before, total, "all handlers were unsubscribed")
}

// The README's refresh pattern: the first handler answers tokenExpired by
// setting a new token, which emits tokenSet from inside the delivery. Every
// subscriber must still see the events in the order they happened.
func TestEventEmittedByHandlerWaitsItsTurn(t *testing.T) {
	t.Parallel()
	var e events.Emitter
	var mu sync.Mutex
	seen := map[string][]string{}
	record := func(who string) events.Handler {
		return func(ev events.Event) {
			mu.Lock()
			seen[who] = append(seen[who], ev.Kind.String())
			mu.Unlock()
		}
	}
	e.Subscribe(func(ev events.Event) {
		record("refresher")(ev)
		if ev.Kind == events.TokenExpired {
			e.Emit(events.Event{Kind: events.TokenSet})
		}
	})
	e.Subscribe(record("observer"))

	e.Emit(events.Event{Kind: events.TokenSet})
	e.Emit(events.Event{Kind: events.TokenExpired})

	want := []string{"tokenSet", "tokenExpired", "tokenSet"}
	assert.Equal(t, want, seen["refresher"])
	assert.Equal(t, want, seen["observer"], "the observer sees tokenExpired before the refresh's tokenSet")
}

func TestEnqueueRunsNoHandler(t *testing.T) {
	t.Parallel()
	var e events.Emitter
	var got []events.Kind
	e.Subscribe(func(ev events.Event) { got = append(got, ev.Kind) })
	e.Enqueue(events.Event{Kind: events.TokenSet})
	e.Enqueue(events.Event{Kind: events.TokenCleared})
	assert.Empty(t, got, "Enqueue may be called under the caller's locks: it runs nothing")
	e.Deliver(context.Background())
	assert.Equal(t, []events.Kind{events.TokenSet, events.TokenCleared}, got)
	e.Deliver(context.Background()) // an empty queue delivers nothing
	assert.Len(t, got, 2)
}

func TestSlowHandlerDoesNotHoldTheCallerPastItsContext(t *testing.T) {
	t.Parallel()
	var e events.Emitter
	release := make(chan struct{})
	delivered := make(chan events.Kind, 2)
	e.Subscribe(func(ev events.Event) {
		<-release // a handler that takes as long as the test wants
		delivered <- ev.Kind
	})
	ctx, cancel := context.WithCancel(context.Background())
	e.Enqueue(events.Event{Kind: events.TokenExpired})
	returned := make(chan struct{})
	go func() {
		e.Deliver(ctx)
		close(returned)
	}()
	cancel() // the caller's deadline passes while the handler still runs
	<-returned

	// The delivery goes on without the caller, and later events still
	// come after it.
	e.Emit(events.Event{Kind: events.TokenSet}) // queued behind the slow one
	close(release)
	assert.Equal(t, events.TokenExpired, <-delivered)
	assert.Equal(t, events.TokenSet, <-delivered)
}

// A handler that ends its goroutine (t.Fatal calls runtime.Goexit) must not
// stop the delivery: the handlers subscribed after it still get the event it
// exited on (a refresh handler still hears tokenExpired), and every handler
// still gets the later events, in order. The same holds when the goroutine
// ends in the panic report (onPanic) of a handler that panicked.
func TestHandlerCallingGoexitDoesNotStopDelivery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		onPanic func(events.Event, any)
		exit    func()
	}{
		{"the handler exits", nil, runtime.Goexit},
		{"the panic report exits", func(events.Event, any) { runtime.Goexit() }, func() { panic("handler bug") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := events.NewEmitter(tt.onPanic)
			var mu sync.Mutex
			var got []string
			record := func(name string, ev events.Event) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, name+":"+ev.Kind.String())
			}
			e.Subscribe(func(ev events.Event) {
				record("first", ev)
				if ev.Kind == events.TokenExpired {
					tt.exit()
				}
			})
			e.Subscribe(func(ev events.Event) { record("second", ev) })
			last := make(chan struct{})
			e.Subscribe(func(ev events.Event) {
				if ev.Kind == events.TokenCleared { // the last event's last handler
					close(last)
				}
			})
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.Emit(events.Event{Kind: events.TokenExpired}) // ends this goroutine
			}()
			<-done
			e.Emit(events.Event{Kind: events.TokenSet})
			e.Emit(events.Event{Kind: events.TokenCleared})
			<-last
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{
				"first:tokenExpired", "second:tokenExpired",
				"first:tokenSet", "second:tokenSet",
				"first:tokenCleared", "second:tokenCleared",
			}, got)
		})
	}
}
