package cache_test

import (
	"fmt"
	"time"

	"github.com/orgauthz/orgauthz/cache"
)

func Example() {
	// A manual clock, so the example controls time.
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// Entries are grouped by user and keyed by permission.
	c, err := cache.New[string, string, string](100,
		cache.WithMaxBytes(1<<20),
		cache.WithClock(func() time.Time { return now }))
	if err != nil {
		fmt.Println(err)
		return
	}

	c.Add("alice", "orders/read", "GRANT", 30*time.Second, 64)
	c.Add("alice", "orders/write", "DENY", 10*time.Second, 64)
	c.Add("bob", "orders/read", "DENY", 10*time.Second, 64)

	v, ok := c.Get("alice", "orders/write")
	fmt.Println(v, ok)

	now = now.Add(15 * time.Second) // the DENYs have expired, the GRANT has not
	_, ok = c.Get("alice", "orders/write")
	fmt.Println("deny still cached:", ok)
	v, ok = c.Get("alice", "orders/read")
	fmt.Println(v, ok)

	// Drop everything that belongs to alice, e.g. when her token changes.
	fmt.Println("removed:", c.RemoveGroup("alice"))
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// DENY true
	// deny still cached: false
	// GRANT true
	// removed: 1
	// {Hits:2 Misses:1 Evictions:0 Expirations:1}
}

// A Writer keeps an answer that was fetched before its group was removed
// from coming back after the removal.
func ExampleCache_Writer() {
	c, err := cache.New[string, string, string](100)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := c.Writer("alice") // before asking the server
	defer w.Close()

	c.RemoveGroup("alice") // meanwhile, alice's token is revoked

	stored := w.Add("orders/read", "GRANT", time.Minute, 64) // the answer arrives
	fmt.Println("stored:", stored)
	// Output:
	// stored: false
}
