package mockserver

import (
	"testing"
	"time"
)

// TestCodeStoresArePerRealm fills one realm's authorization codes and
// requires that another realm still issues them, and that a code is only
// found, and spent, in the realm that issued it. With one store for all
// realms, a user of one realm who never redeemed 10,000 codes blocked
// sign-in everywhere, and a code shown to another realm was spent.
func TestCodeStoresArePerRealm(t *testing.T) {
	var cs codeStore
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	live := func(realm string) *authCode { return &authCode{realm: realm, expires: now.Add(codeLifetime)} }
	for range maxCodes {
		if _, ok := cs.add(now, live("a")); !ok {
			t.Fatal("realm a refused a code before its store was full")
		}
	}
	if _, ok := cs.add(now, live("a")); ok {
		t.Fatal("realm a's full store took another live code")
	}
	code, ok := cs.add(now, live("b"))
	if !ok {
		t.Fatal("realm b was refused a code because realm a's store is full")
	}
	if _, ok := cs.take("a", code); ok {
		t.Fatal("realm a redeemed realm b's code")
	}
	if c, ok := cs.take("b", code); !ok || c.realm != "b" {
		t.Fatal("realm b's code was spent by the attempt in realm a")
	}
	if _, ok := cs.add(now.Add(codeLifetime), live("a")); !ok {
		t.Fatal("realm a's expired codes were not dropped to make room")
	}
}
