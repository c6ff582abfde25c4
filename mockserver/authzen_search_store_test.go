package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// TestSubjectSearchSeesNewUsers: a new user who matches, made between
// pages, is listed when its id sorts after the cursor and not before it,
// and nothing is listed twice. No route makes a user in a live realm
// (fixtures and tenant provisioning do), so the test adds them to the
// store itself, as those do.
func TestSubjectSearchSeesNewUsers(t *testing.T) {
	t.Parallel()
	s := scaleServer(t, searchFixture(40))
	tok, err := s.IssueToken("big", "service-account-orders-api")
	require.NoError(t, err)
	page := func(token string) ([]string, string) {
		body := `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"limit":5,"token":"` + token + `"}}`
		var out azSearchAnswer
		require.NoError(t, json.Unmarshal(serve(t, s, http.MethodPost, searchBenchPath, tok, body, http.StatusOK).Body.Bytes(), &out))
		var ids []string
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		return ids, out.Page.NextToken
	}
	first, next := page("")
	require.Len(t, first, 5)
	require.NotEmpty(t, next)
	cursor := first[4]

	var before, after []string // the new members' ids, by side of the cursor
	err = s.store.Write("big", func(rm *store.Realm) error {
		member := rm.RoleByName["member"]
		for i := 0; len(before) == 0 || len(after) == 0; i++ {
			if i == 64 {
				return errors.New("64 new ids on one side of the cursor")
			}
			u, err := rm.AddUser(store.User{Username: fmt.Sprint("new", i)}, []string{member}, nil)
			if err != nil {
				return err
			}
			if u.ID < cursor {
				before = append(before, u.ID)
			} else {
				after = append(after, u.ID)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, s.store.CheckInvariants())

	var rest []string
	for next != "" {
		var ids []string
		ids, next = page(next)
		rest = append(rest, ids...)
	}
	var want []string // every member after the cursor, as the store has them now
	err = s.store.Read("big", func(rm *store.Realm) error {
		member := rm.RoleByName["member"]
		for id := range rm.UserIDsAfter(cursor) {
			if _, ok := rm.Users[id].RoleIDs[member]; ok {
				want = append(want, id)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, want, rest)
	for _, id := range after {
		assert.Contains(t, rest, id, "a new member after the cursor")
	}
	for _, id := range before {
		assert.NotContains(t, rest, id, "a new member before the cursor")
	}
	all := slices.Concat(first, rest)
	assert.True(t, slices.IsSorted(all), "in id order")
	assert.Len(t, slices.Compact(slices.Clone(all)), len(all), "nothing twice")
}
