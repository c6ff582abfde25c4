package events_test

import (
	"errors"
	"fmt"

	"github.com/orgauthz/orgauthz/events"
)

func ExampleEmitter() {
	e := events.NewEmitter(func(ev events.Event, recovered any) {
		fmt.Println("recovered:", recovered)
	})
	unsubscribe := e.Subscribe(func(ev events.Event) {
		fmt.Println("got", ev.Kind, ev.TokenType, ev.Err)
	})
	e.Subscribe(func(events.Event) { panic("a buggy handler") })

	e.Emit(events.Event{Kind: events.TokenSet, TokenType: "Bearer"})
	e.Emit(events.Event{Kind: events.TokenExpired, TokenType: "Bearer", Err: errors.New("gateway answered 401")})
	unsubscribe()
	e.Emit(events.Event{Kind: events.TokenCleared})
	// Output:
	// got tokenSet Bearer <nil>
	// recovered: a buggy handler
	// got tokenExpired Bearer gateway answered 401
	// recovered: a buggy handler
	// recovered: a buggy handler
}
