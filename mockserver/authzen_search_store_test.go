package mockserver

import (
	"context"
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
	tok := mustIssue(t, s, "big", "service-account-orders-api")
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
	err := s.store.Write("big", func(rm *store.Realm) error {
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

// rareFixture is searchFixture with one user in every 50 a member (who may
// read orders).
func rareFixture(n int) Fixture {
	fx := searchFixture(n)
	for i := range fx.Realms[0].Users {
		fx.Realms[0].Users[i].Roles = nil
		if i%50 == 0 {
			fx.Realms[0].Users[i].Roles = []string{"member"}
		}
	}
	return fx
}

// readSubjects pages through a subject search of readers of orders on h,
// limit results a page, from the page token first on, and returns every
// id found and the number of pages read.
func readSubjects(t *testing.T, h http.Handler, tok, first string, limit int) ([]string, int) {
	t.Helper()
	var ids []string
	next := first
	for pages := 1; ; pages++ {
		require.Less(t, pages, 10_000, "the search ends")
		body := `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"limit":` +
			fmt.Sprint(limit) + `,"token":"` + next + `"}}`
		var out azSearchAnswer
		require.NoError(t, json.Unmarshal(serve(t, h, http.MethodPost, searchBenchPath, tok, body, http.StatusOK).Body.Bytes(), &out))
		require.Len(t, out.Results, out.Page.Count)
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		if next = out.Page.NextToken; next == "" {
			return ids, pages
		}
	}
}

// members returns the ids of rareFixture's members in id order.
func members(t *testing.T, s *Server) []string {
	t.Helper()
	var ids []string
	require.NoError(t, s.store.Read("big", func(rm *store.Realm) error {
		member := rm.RoleByName["member"]
		for id := range rm.UserIDsAfter("") {
			if _, ok := rm.Users[id].RoleIDs[member]; ok {
				ids = append(ids, id)
			}
		}
		return nil
	}))
	return ids
}

// TestSubjectSearchPageEvaluatesBoundedUsers: where matches are rare, a
// page of a subject search evaluates at most its bound of users under the
// realm's lock, then ends with what it found (perhaps nothing) and a token
// that resumes after the last user it evaluated: paging still lists every
// match once, in id order, in at least users/bound pages.
func TestSubjectSearchPageEvaluatesBoundedUsers(t *testing.T) {
	t.Parallel()
	const users, bound = 500, 20
	s := scaleServer(t, rareFixture(users))
	s.subjectScan = bound
	tok := mustIssue(t, s, "big", "service-account-orders-api")
	got, pages := readSubjects(t, s, tok, "", 100)
	require.Equal(t, members(t, s), got)
	require.GreaterOrEqual(t, pages, users/bound, "a page evaluated more users than its bound")
}

// TestSubjectSearchStopsWhenItsClientHasGone: a page whose request's
// context is done stops evaluating users (within subjectScanCheck of them)
// instead of reading on through the realm under its lock.
func TestSubjectSearchStopsWhenItsClientHasGone(t *testing.T) {
	t.Parallel()
	s := scaleServer(t, rareFixture(4*subjectScanCheck))
	tok := mustIssue(t, s, "big", "service-account-orders-api")
	all := members(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	gone := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.ServeHTTP(w, r.WithContext(ctx)) })
	body := `{"subject":{"type":"user"},"action":{"name":"read"},"resource":{"type":"orders","id":"1"},"page":{"limit":100}}`
	var out azSearchAnswer
	require.NoError(t, json.Unmarshal(serve(t, gone, http.MethodPost, searchBenchPath, tok, body, http.StatusOK).Body.Bytes(), &out))
	require.NotEmpty(t, out.Page.NextToken, "the page read on after its client had gone")
	require.Less(t, out.Page.Count, len(all))
	// What it found, and the pages after it, are the search's.
	rest, _ := readSubjects(t, s, tok, out.Page.NextToken, 100)
	var first []string
	for _, r := range out.Results {
		first = append(first, r.ID)
	}
	require.Equal(t, all, append(first, rest...))
}
