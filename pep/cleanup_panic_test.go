package pep_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

func init() { children["unregister-panics"] = unregisterPanicsChild }

// unregisterPanicsMP is a user's MeterProvider whose Registration's
// Unregister tells unregistered, then panics.
type unregisterPanicsMP struct {
	noop.MeterProvider
	unregistered chan struct{}
}

func (p unregisterPanicsMP) Meter(string, ...metric.MeterOption) metric.Meter {
	return unregisterPanicsMeter{unregistered: p.unregistered}
}

type unregisterPanicsMeter struct {
	noop.Meter
	unregistered chan struct{}
}

func (m unregisterPanicsMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return unregisterPanicsReg{unregistered: m.unregistered}, nil
}

type unregisterPanicsReg struct {
	noop.Registration
	unregistered chan struct{}
}

func (r unregisterPanicsReg) Unregister() error {
	r.unregistered <- struct{}{}
	panic("a bug in the user's meter SDK's Unregister")
}

// collect runs the garbage collector until done is closed, for at most 5
// seconds; it reports whether done was closed.
func collect(done <-chan struct{}) bool {
	bound := time.After(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-done:
			return true
		case <-bound:
			return false
		default:
			runtime.Gosched()
		}
	}
}

// unregisterPanicsChild drops clients made with the user's meter provider
// and collects them; it exits 0 once their metrics were unregistered and
// a cleanup made after them ran too: the process outlived the panics.
func unregisterPanicsChild() int {
	const clients = 4
	unregistered := make(chan struct{}, clients)
	for range clients {
		c, err := hangguard.NewPep("http://gateway.invalid", "acme", "orders-api",
			pep.WithMeterProvider(unregisterPanicsMP{unregistered: unregistered}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		_, _ = c.Check(context.Background(), "orders", "read")
		_ = c.Close()
	}
	all := make(chan struct{})
	go func() {
		for range clients {
			<-unregistered
		}
		close(all)
	}()
	if !collect(all) {
		fmt.Fprintln(os.Stderr, "the dropped clients' metrics were not unregistered")
		return 1
	}
	later := make(chan struct{})
	runtime.AddCleanup(new([64]byte), func(ch chan struct{}) { close(ch) }, later) // unreachable at once
	if !collect(later) {
		fmt.Fprintln(os.Stderr, "no cleanup ran after the panics")
		return 1
	}
	return 0
}

// The user's meter SDK whose Registration.Unregister panics, called when a
// dropped client is collected (on the runtime's cleanup goroutine, where
// nothing else recovers), never ends the process (it used to).
func TestMeterUnregisterPanicNeverEndsTheProcess(t *testing.T) {
	t.Parallel()
	runChild(t, "unregister-panics")
}
