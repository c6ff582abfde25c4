package mockserver

import (
	"strconv"
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
	user := 0
	live := func(realm string) *authCode {
		user++ // one code per user: a user alone cannot fill a store
		return &authCode{realm: realm, username: strconv.Itoa(user), expires: now.Add(codeLifetime)}
	}
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
	if _, ok := take(&cs, "a", code); ok {
		t.Fatal("realm a redeemed realm b's code")
	}
	if c, ok := take(&cs, "b", code); !ok || c.realm != "b" {
		t.Fatal("realm b's code was spent by the attempt in realm a")
	}
	if _, ok := cs.add(now.Add(codeLifetime), live("a")); !ok {
		t.Fatal("realm a's expired codes were not dropped to make room")
	}
}

// TestOneUserCannotFillTheRealmsCodes has one signed-in user ask for codes
// without redeeming them, as a script can, and requires that another user
// of the realm still signs in, and that the first user's newest codes stay
// redeemable while its oldest make room. With one bound for the realm
// only, one user's 10,000 unredeemed codes locked every other user of the
// realm out of signing in for the codes' lifetime.
func TestOneUserCannotFillTheRealmsCodes(t *testing.T) {
	var cs codeStore
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	code := func(username string) *authCode {
		return &authCode{realm: "a", username: username, expires: now.Add(codeLifetime)}
	}
	var mallory []string
	for range maxCodes {
		c, ok := cs.add(now, code("mallory"))
		if !ok {
			t.Fatal("a user was refused a code of its own")
		}
		mallory = append(mallory, c)
	}
	alice, ok := cs.add(now, code("alice"))
	if !ok {
		t.Fatal("one user's unredeemed codes locked another user out of signing in")
	}
	if c, ok := take(&cs, "a", alice); !ok || c.username != "alice" {
		t.Fatal("alice's code was not redeemable")
	}
	if _, ok := take(&cs, "a", mallory[0]); ok {
		t.Fatal("a user's oldest code outlived its newer ones beyond the bound")
	}
	newest := mallory[len(mallory)-1]
	if c, ok := take(&cs, "a", newest); !ok || c.username != "mallory" {
		t.Fatal("a user's newest code was not redeemable")
	}
	cs.mu.Lock()
	held := len(cs.byRealm["a"].codes)
	cs.mu.Unlock()
	if held != maxCodesPerUser+1 {
		t.Fatalf("the realm holds %d codes; want mallory's bound and alice's one, %d (spent ones are kept until they expire)", held, maxCodesPerUser+1)
	}
}

// take redeems realm's code as the token endpoint does: found, then
// claimed by this call.
func take(cs *codeStore, realm, code string) (*authCode, bool) {
	c, ok := cs.peek(realm, code)
	return c, ok && cs.claim(realm, code)
}

// TestSpentCodesDoNotFillTheRealmsCodes: spent codes are kept until they
// expire, so that a reuse is known and revokes the code's token, but a
// realm whose store is full of them still issues codes: the bound is on
// unredeemed codes, and spent ones make room.
func TestSpentCodesDoNotFillTheRealmsCodes(t *testing.T) {
	var cs codeStore
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxCodes {
		code, ok := cs.add(now, &authCode{realm: "a", username: strconv.Itoa(i), expires: now.Add(codeLifetime)})
		if !ok {
			t.Fatal("realm a refused a code before its store was full")
		}
		if _, ok := take(&cs, "a", code); !ok {
			t.Fatal("a fresh code was not redeemable")
		}
	}
	code, ok := cs.add(now, &authCode{realm: "a", username: "late", expires: now.Add(codeLifetime)})
	if !ok {
		t.Fatal("a realm full of spent codes refused a sign-in")
	}
	if _, ok := take(&cs, "a", code); !ok {
		t.Fatal("the new code was not redeemable")
	}
}
