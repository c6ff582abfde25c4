package decision

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestSubjectCacheFollowsEveryWrite: after every write of the realm, of
// whatever kind and whether it succeeds or not, every subject the cache
// gives is the one SubjectOf computes from the live realm, though each was
// cached before the write: a cached subject never outlives a change of its
// roles, groups or assignments.
func TestSubjectCacheFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	w.r.SigningKey, w.r.KeyID = key, "k"
	st := store.New(nil)
	require.NoError(t, st.Install(w.r))
	id := w.ids
	now := time.Unix(0, 0)

	var c SubjectCache
	users := []string{id["alice"], id["bob"], id["carol"], id["dave"], "nobody"}
	orgs := []string{"", "eu", "us", id["eu"], "nowhere"}
	check := func(t *testing.T, step string) {
		t.Helper()
		require.NoError(t, st.Read("acme", func(r *store.Realm) error {
			for _, u := range users {
				for _, org := range orgs {
					require.Equal(t, SubjectOf(r, u, org), *c.Of(r, u, org), "%s: user %s org %q", step, u, org)
					require.Same(t, c.Of(r, u, org), c.Of(r, u, org), "%s: cached while nothing changes", step)
				}
			}
			return nil
		}))
	}
	steps := []struct {
		name  string
		write func(r *store.Realm) error
	}{
		{"unassign", func(r *store.Realm) error { return r.Unassign(id["carol"], id["sales"]) }},
		{"assign", func(r *store.Realm) error { _, _, err := r.Assign(id["alice"], id["ops"], now); return err }},
		{"unlink an organization role", func(r *store.Realm) error { return r.UnlinkRole(id["us"], id["auditor"]) }},
		{"link an organization role", func(r *store.Realm) error { _, err := r.LinkRole(id["eu"], id["approver"]); return err }},
		{"leave a group", func(r *store.Realm) error { delete(r.Users[id["bob"]].GroupIDs, id["finance"]); return nil }},
		{"a group's roles", func(r *store.Realm) error { r.Groups[id["finance"]].RoleIDs[id["editor"]] = struct{}{}; return nil }},
		{"a direct role", func(r *store.Realm) error { r.Users[id["alice"]].RoleIDs[id["auditor"]] = struct{}{}; return nil }},
		{"delete an organization", func(r *store.Realm) error { return r.DeleteOrganization(id["us"]) }},
		{"a write that fails", func(*store.Realm) error { return errors.New("refused") }},
	}
	check(t, "before any write")
	for _, s := range steps {
		_ = st.Write("acme", s.write)
		check(t, s.name)
	}
}
