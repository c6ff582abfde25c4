package cache_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/cache"
)

func Example() {
	// A manual clock, so the example controls time.
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := cache.New[string, string](2, cache.WithClock(func() time.Time { return now }))
	if err != nil {
		fmt.Println(err)
		return
	}

	c.Add("alice|orders|read", "GRANT", 30*time.Second)
	c.Add("alice|orders|write", "DENY", 10*time.Second)

	v, ok := c.Get("alice|orders|write")
	fmt.Println(v, ok)

	now = now.Add(15 * time.Second) // the DENY has expired, the GRANT has not
	_, ok = c.Get("alice|orders|write")
	fmt.Println("deny still cached:", ok)
	v, ok = c.Get("alice|orders|read")
	fmt.Println(v, ok)

	// Drop everything that belongs to alice, e.g. when her token changes.
	removed := c.RemoveFunc(func(k, _ string) bool { return strings.HasPrefix(k, "alice|") })
	fmt.Println("removed:", removed)
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// DENY true
	// deny still cached: false
	// GRANT true
	// removed: 1
	// {Hits:2 Misses:1 Evictions:0 Expirations:1}
}
