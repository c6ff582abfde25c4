package store

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestSeededIDsNameWhatAnObjectIs: with a key seed, an object's id derives
// from its kind and its name in the realm, never from its place among the
// others. Replicas whose fixtures list other objects, or list them in
// another order, or whose code builds them in another order, give a user
// the same id (her tokens are hers at each) and never give her id to
// anyone else (a-edge16b F1 and its sequel: an id taken from the place
// handed a removed user's id, with her tokens, to the next user).
func TestSeededIDsNameWhatAnObjectIs(t *testing.T) {
	seed := []byte("one key seed for every replica")
	build := func(roles, users []string) *Realm {
		r := NewRealm("acme", t0)
		r.SeedIDs(seed)
		for _, name := range roles {
			testkit.Must(r.AddRole(name, "", nil))(t)
		}
		for _, name := range users {
			testkit.Must(r.AddUser(User{Username: name}, nil, nil))(t)
		}
		return r
	}
	id := func(r *Realm, username string) string {
		u, ok := r.UserNamed(username)
		if !ok {
			t.Fatalf("no user %q", username)
		}
		return u.ID
	}

	a := build([]string{"chief"}, []string{"mallory", "boss", "alice"})
	b := build([]string{"clerk", "chief", "auditor"}, []string{"alice", "boss"}) // mallory gone, others moved
	for _, name := range []string{"boss", "alice"} {
		if id(a, name) != id(b, name) {
			t.Errorf("%s has two ids at two replicas of one seed: her tokens are refused at one", name)
		}
	}
	held := map[string]string{}
	for _, r := range []*Realm{a, b} {
		for uid, u := range r.Users {
			if other, ok := held[uid]; ok && other != u.Username {
				t.Errorf("id %s names %s at one replica and %s at another", uid, other, u.Username)
			}
			held[uid] = u.Username
		}
	}
	if id(a, "mallory") == id(a, "boss") || id(a, "alice") == id(b, "boss") {
		t.Error("two users share an id")
	}

	other := NewRealm("acme", t0)
	other.SeedIDs([]byte("another seed"))
	if testkit.Must(other.AddUser(User{Username: "alice"}, nil, nil))(t).ID == id(a, "alice") {
		t.Error("another seed gave alice the same id")
	}
	realm2 := NewRealm("globex", t0)
	realm2.SeedIDs(seed)
	if testkit.Must(realm2.AddUser(User{Username: "alice"}, nil, nil))(t).ID == id(a, "alice") {
		t.Error("another realm's alice has acme's alice's id")
	}
	if testkit.Must(a.AddGroup("alice", nil, nil))(t).ID == id(a, "alice") {
		t.Error("a group named alice has user alice's id")
	}

	// A client's service account and a person given its username by
	// another fixture are two parties.
	withClient := NewRealm("acme", t0)
	withClient.SeedIDs(seed)
	c := testkit.Must(withClient.AddClient(Client{ClientID: "x", Secret: "s"}, nil))(t)
	withPerson := NewRealm("acme", t0)
	withPerson.SeedIDs(seed)
	person := testkit.Must(withPerson.AddUser(User{Username: ServiceAccountPrefix + "x"}, nil, nil))(t)
	if person.ID == c.ServiceAccountUserID {
		t.Error("a person named as client x's service account has its id: the client's tokens are hers at her replica")
	}

	// Two departments of one name under two parents are two objects.
	o := testkit.Must(a.CreateOrganization(OrgSpec{Name: "Acme", Alias: "acme-org"}, t0))(t)
	p1 := mustDept(t, a, o.ID, "", DeptSpec{Name: "Sales", Children: []DeptSpec{{Name: "East"}}})
	p2 := mustDept(t, a, o.ID, "", DeptSpec{Name: "Support", Children: []DeptSpec{{Name: "East"}}})
	if p1.ID == p2.ID {
		t.Fatal("two departments share an id")
	}
	seen := map[string]bool{}
	for did := range a.Depts {
		if seen[did] {
			t.Fatalf("department id %s given twice", did)
		}
		seen[did] = true
	}
	if len(seen) != 4 {
		t.Errorf("%d departments, want 4", len(seen))
	}
}
