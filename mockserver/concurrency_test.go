package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// expect sends a request from any goroutine and returns an error unless the
// status is want; the result's id, when there is one, is returned.
func (a *orgAPI) expect(want int, method, path string, body any) (string, error) {
	r, err := a.send(a.admin, method, path, body)
	if err != nil {
		return "", err
	}
	if r.Status != want {
		return "", fmt.Errorf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	var out idResult
	_ = json.Unmarshal(r.Body, &out)
	return out.Result.ID, nil
}

// TestConcurrentOrganizationWork runs many parallel creates, assignments,
// links and deletes, then checks that no write was lost, nothing is
// orphaned and every index agrees with its primary map.
func TestConcurrentOrganizationWork(t *testing.T) {
	a := newOrgAPI(t)
	users := []string{a.id("user", "bob"), a.id("user", "carol"), a.id("user", "dave")}
	editor := a.id("role", "editor")
	const workers, roots = 8, 4

	shared := a.createOrg("Shared", "shared")
	sharedDept := a.createDept(shared, "", "Everyone", "everyone")

	orgIDs := make([]string, workers)
	var contestedWins, contestedLosses atomic.Int32
	work := func(w int) error {
		org, err := a.expect(201, "POST", "", map[string]any{"name": fmt.Sprint("Org ", w), "alias": fmt.Sprint("org-", w)})
		if err != nil {
			return err
		}
		orgIDs[w] = org
		if _, err := a.expect(200, "POST", "/"+org+"/roles", map[string]any{"roleId": editor}); err != nil {
			return err
		}
		for i := range roots {
			root, err := a.expect(201, "POST", "/"+org+"/departments", map[string]any{"name": fmt.Sprint("Root ", i), "alias": fmt.Sprint("root-", i)})
			if err != nil {
				return err
			}
			sub, err := a.expect(201, "POST", "/"+org+"/departments/"+root+"/sub-departments", map[string]any{"name": "Sub", "alias": fmt.Sprint("sub-", i)})
			if err != nil {
				return err
			}
			for _, u := range users {
				if _, err := a.expect(200, "POST", "/"+org+"/departments/"+sub+"/users", map[string]any{"userId": u}); err != nil {
					return err
				}
			}
			// Every worker assigns the same users to the shared department.
			for _, u := range users {
				if _, err := a.expect(200, "POST", "/"+shared+"/departments/"+sharedDept+"/users", map[string]any{"userId": u}); err != nil {
					return err
				}
			}
			// Odd roots are deleted again, subtree and assignments included.
			if i%2 == 1 {
				if _, err := a.expect(200, "DELETE", "/"+org+"/departments/"+root, nil); err != nil {
					return err
				}
			}
			if _, err := a.expect(200, "GET", "/"+org+"/departments/tenant-tree", nil); err != nil {
				return err
			}
		}
		// Everyone races for one alias; exactly one wins.
		r, err := a.send(a.admin, "POST", "", map[string]any{"name": "Contested", "alias": "contested"})
		if err != nil {
			return err
		}
		switch r.Status {
		case http.StatusCreated:
			contestedWins.Add(1)
		case http.StatusConflict:
			contestedLosses.Add(1)
		default:
			return fmt.Errorf("contested alias: status %d: %s", r.Status, r.Body)
		}
		// Odd workers delete their whole organization.
		if w%2 == 1 {
			if _, err := a.expect(200, "DELETE", "/"+org, nil); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs[w] = work(w) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, int32(1), contestedWins.Load())
	assert.Equal(t, int32(workers-1), contestedLosses.Load())

	a.realm(func(rm *store.Realm) {
		perOrg := map[string]int{}
		for _, d := range rm.Depts {
			perOrg[d.OrgID]++
		}
		assignPerOrg := map[string]int{}
		for did, users := range rm.AssignmentsByDept() {
			assignPerOrg[rm.Depts[did].OrgID] += len(users)
		}
		for w, org := range orgIDs {
			if w%2 == 1 {
				assert.NotContains(t, rm.Orgs, org)
				assert.Zero(t, perOrg[org], "departments of deleted org %d", w)
				assert.Zero(t, assignPerOrg[org], "assignments of deleted org %d", w)
				assert.NotContains(t, rm.OrgRoles, org)
				continue
			}
			assert.Contains(t, rm.Orgs, org)
			assert.Equal(t, roots/2*2, perOrg[org], "org %d keeps its even roots and their subs", w)
			assert.Equal(t, roots/2*len(users), assignPerOrg[org], "org %d assignments", w)
			assert.Contains(t, rm.OrgRoles[org], editor)
		}
		assert.Equal(t, len(users), assignPerOrg[shared], "repeated assignments stay single")
		assert.Len(t, rm.Orgs, workers/2+2, "even workers' orgs, shared, contested")
	})
}
