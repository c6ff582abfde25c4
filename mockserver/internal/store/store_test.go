package store

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func keyedRealm(t testing.TB, name string) *Realm {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	r := NewRealm(name, t0)
	r.SigningKey, r.KeyID = k, "kid-"+name
	return r
}

// TestRealmsHaveTheirOwnLock: while one realm's write lock is held, another
// realm can be read and written, looked up, and a realm can be installed.
// With one lock for the whole store each of these waited.
func TestRealmsHaveTheirOwnLock(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a"), keyedRealm(t, "b")))
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Write("b", func(*Realm) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	require.NoError(t, s.Read("a", func(r *Realm) error { _ = r.Orgs; return nil }))
	require.NoError(t, s.Write("a", func(r *Realm) error {
		_, err := r.CreateOrganization(OrgSpec{Name: "X", Alias: "x"}, t0)
		return err
	}))
	_, ok := s.Lookup("b")
	require.True(t, ok)
	require.NoError(t, s.Install(keyedRealm(t, "c")))
	s.RecordAudit("", AuditEntry{Action: "x"})
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, s.CheckInvariants())
}

// TestInstallIsAllOrNothing: a clash or a realm without a key installs none
// of the realms given.
func TestInstallIsAllOrNothing(t *testing.T) {
	t.Parallel()
	s := New(nil)
	require.NoError(t, s.Install(keyedRealm(t, "a")))
	require.ErrorIs(t, s.Install(keyedRealm(t, "b"), keyedRealm(t, "a")), ErrConflict)
	require.ErrorIs(t, s.Install(keyedRealm(t, "c"), keyedRealm(t, "c")), ErrConflict)
	require.ErrorIs(t, s.Install(keyedRealm(t, "d"), NewRealm("nokey", t0)), ErrInvalid)
	require.ElementsMatch(t, []string{"a"}, s.Realms())
	require.ErrorIs(t, s.Read("b", func(*Realm) error { return nil }), ErrNotFound)
}

// TestGenerationCountsEveryWrite: every write of a realm changes its
// generation, one that fails and decommissioning included; a read, or a
// write of another realm, does not.
func TestGenerationCountsEveryWrite(t *testing.T) {
	t.Parallel()
	s := New(func() time.Time { return t0 })
	k := keyedRealm(t, "x")
	r, err := s.ProvisionTenant("initech", "free", "a@initech.test", "pw", k.SigningKey, k.KeyID)
	require.NoError(t, err)
	require.NoError(t, s.Install(keyedRealm(t, "other")))
	gen := func() (g uint64) {
		require.NoError(t, s.Read(r.Name, func(r *Realm) error { g = r.Generation(); return nil }))
		return g
	}
	seen := map[uint64]bool{gen(): true}
	changes := func(what string) {
		t.Helper()
		g := gen()
		require.False(t, seen[g], "%s changes the generation", what)
		seen[g] = true
	}
	require.NoError(t, s.Write(r.Name, func(*Realm) error { return nil }))
	changes("a write")
	require.Error(t, s.Write(r.Name, func(*Realm) error { return ErrInvalid }))
	changes("a write that fails")
	require.NoError(t, s.Read(r.Name, func(*Realm) error { return nil }))
	require.NoError(t, s.Write("other", func(*Realm) error { return nil }))
	require.True(t, seen[gen()], "a read, or another realm's write, does not")
	_, _, err = s.DecommissionTenant(r.TenantID())
	require.NoError(t, err)
	changes("decommissioning")
}

// TestNewID: version 4, variant RFC 4122, lower-case hex, distinct.
func TestNewID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		require.Regexp(t, re, id)
		require.False(t, seen[id])
		seen[id] = true
	}
}

// TestUserIDsAfter: the realm's user ids come in byte order from any
// cursor, a user's own id or one that is no user's, as users are added.
func TestUserIDsAfter(t *testing.T) {
	t.Parallel()
	r := NewRealm("acme", t0)
	var ids []string
	for i := range 300 {
		u, err := r.AddUser(User{Username: fmt.Sprint("u", i)}, nil, nil)
		require.NoError(t, err)
		ids = append(ids, u.ID)
		if i%60 == 0 {
			slices.Sort(ids)
			require.Equal(t, ids, slices.Collect(r.UserIDsAfter("")))
		}
	}
	slices.Sort(ids)
	require.NoError(t, r.CheckInvariants())
	for i, id := range ids {
		require.Equal(t, ids[i+1:], append([]string{}, slices.Collect(r.UserIDsAfter(id))...), "after user %d", i)
		between := id + "\x00" // no user's id, just after this one
		require.Equal(t, ids[i+1:], append([]string{}, slices.Collect(r.UserIDsAfter(between))...), "after %q", between)
	}
	require.Empty(t, slices.Collect(r.UserIDsAfter("~")), "after every id")
}
