package decision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestAnOwnerStringNamesOneUser: an ownership condition reads a
// resource's property as its owner's username or email, so the store
// keeps each such string to one user: a username that is another user's
// email, an email that is another's email or username, is refused
// (a-fix9b: "morty@citadel.test", morty's email, named rick too, and a
// second user with morty's email, each decided the owner of morty's
// todo). A user whose username is its own email still loads.
func TestAnOwnerStringNamesOneUser(t *testing.T) {
	t.Parallel()
	r := store.NewRealm("acme", time.Unix(0, 0))
	editor := testkit.Must(r.AddRole("editor", "", nil))(t)
	testkit.Must(r.AddUser(store.User{Username: "morty", Email: "morty@citadel.test"}, []string{editor.ID}, nil))(t)
	c := testkit.Must(r.AddClient(store.Client{ClientID: "todo", Secret: "s",
		Resources:   []store.ClientResource{{Name: "todo", Scopes: []string{"update"}}},
		Permissions: []store.ClientPermission{{Name: "own", Resource: "todo", Roles: []string{editor.ID}, OwnerProperty: "ownerID"}}}, nil))(t)
	mortysTodo := map[string]any{"ownerID": "morty@citadel.test"}
	morty := SubjectOf(r, r.UserByName["morty"], "")
	require.Equal(t, Grant, Compile(c).Decide(&morty, "todo", "update", "PUT", mortysTodo), "the owner")

	for name, u := range map[string]store.User{
		"a username that is morty's email":  {Username: "morty@citadel.test"},
		"a second user with morty's email":  {Username: "rick", Email: "morty@citadel.test"},
		"an email that is morty's username": {Username: "summer", Email: "morty"},
	} {
		_, err := r.AddUser(u, []string{editor.ID}, nil)
		require.ErrorIsf(t, err, store.ErrConflict, "%s", name)
	}
	testkit.Must(r.AddUser(store.User{Username: "beth@citadel.test", Email: "beth@citadel.test"}, nil, nil))(t, "a username that is the user's own email")
}
