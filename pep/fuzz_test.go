package pep_test

// Differential fuzz targets: random and mutated gateway answers are read by
// a real client and by the independent strict reference reader of
// refjson_test.go; the client may never allow what the reference does not.
// Run them longer than their seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 10m ./pep
//	go test -run '^$' -fuzz '^FuzzOrganizations$' -fuzztime 10m ./pep
//
// Seeds live in testdata/fuzz/FuzzDecode (one file per case, `go test fuzz
// v1` format) and in the f.Add calls below; a crasher found by the fuzzer
// is written there too and becomes a regression test once committed.

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// fzToken is the token of every fuzzed call; the gateway may echo it, and
// no error text may then contain it (fail-closed rule 7 of the README).
const fzToken = "fz-secret-token.eyJzdWIiOiJmdXp6In0.c2lnbmF0dXJl"

// fzAsk is the fixed request of CheckMany: three pairs of two resources.
var fzAsk = []pep.Resource{
	{Name: "orders", Scopes: []string{"read", "write"}},
	{Name: "invoices", Scopes: []string{"read"}},
}

// fzList is the fixed request of ListGranted: every scope of orders, and
// read on every resource.
var fzList = []pep.Resource{{Name: "orders"}, {Name: "*", Scopes: []string{"read"}}}

// fzCovered reports whether the ListGranted request asks for p.
func fzCovered(p refPair) bool { return p.resource == "orders" || p.scope == "read" }

// fzStatus maps the fuzzer's number onto an HTTP status from 100 to 599;
// one in that range is itself, so seeds say what they mean.
func fzStatus(n uint16) int {
	if n >= 100 && n <= 599 {
		return int(n)
	}
	return 100 + int(n)%500
}

// fzEvents returns the first n events the handler saw, in order, waiting
// for each at most a minute (a liveness bound: delivery may run on a
// goroutine of its own, after the call that caused it returned).
func fzEvents(t *testing.T, kinds <-chan events.Kind, n int) []events.Kind {
	t.Helper()
	got := make([]events.Kind, 0, n)
	for range n {
		select {
		case k := <-kinds:
			got = append(got, k)
		case <-time.After(time.Minute):
			t.Fatalf("%d events delivered, want %d: %v", len(got), n, got)
		}
	}
	return got
}

// fzClient returns a client whose gateway answers every request with
// status, content type and body.
func fzClient(t *testing.T, status int, contentType string, body []byte, opts ...pep.Option) *pep.Client {
	mock := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp := cannedResponse(r, status, body)
		if contentType != "" {
			resp.Header.Set("Content-Type", contentType)
		}
		return resp, nil
	})
	all := append([]pep.Option{
		pep.WithHTTPClient(&http.Client{Transport: mock}),
		pep.WithRetry(0, 0, 0), pep.WithBreaker(0, 0),
	}, opts...)
	c := mustPep(t, "https://gateway.fuzz", "acme", "orders-api", all...)
	c.SetToken(fzToken)
	return c
}

// fzAuthorizeSeeds are answers of every kind the contract names:
// duplicate and case-variant members, unknown statuses, wrong types, extra
// and missing pairs.
var fzAuthorizeSeeds = []string{
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"write","status":"GRANT"},{"resource":"invoices","scope":"read","status":"GRANT"}]}`,
	`{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"write","status":"DENY"},{"resource":"invoices","scope":"read","status":"ERROR"}]}`,
	`{"status":"GRANT","permissions":[]}`,
	`{"status":"GRANT"}`,
	`{"permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"read","status":"DENY"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"*","scope":"read","status":"GRANT"},{"resource":"orders","scope":"","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"Orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"READ","status":"GRANT"},{"resource":"orders ","scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"grant"}]}`,
	`{"status":"OK","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	`{"Status":"GRANT","status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"DENY","Status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"DENY","ſtatus":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}],"permıssıons":[{"resource":"orders","scope":"read","status":"DENY"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","ﬆatus":"DENY","noté":"x"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"DENY","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"DENY","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[],"permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","reason":"role viewer"}],"decisionId":"x"}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]} {}`,
	`{"status":"GRANT","permissions":{"orders":"read"}}`,
	`{"status":"GRANT","permissions":[null,{"resource":"orders","scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":1}]}`,
	`{"status":"GRANT","permissions":[{"resource":["orders"],"scope":"read","status":"GRANT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","status":"GRANT"}]}`,
	`{"status":true,"permissions":[]}`,
	"{\"status\":\"GRANT\",\"permissions\":[{\"resource\":\"orders\xff\",\"scope\":\"read\",\"status\":\"GRANT\"}]}",
	`{"status":"\u0047RANT","permissions":[{"resource":"\u006frders","scope":"read","status":"GR\u0041NT"}]}`,
	`{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","x":{"status":"DENY","status":"GRANT"}}]}`,
	`{"error":"Forbidden","message":"` + fzToken + `"}`,
	`null`,
	``,
	`<html>maintenance</html>`,
}

// FuzzDecode feeds arbitrary gateway answers (status, content type, body)
// to CheckMany and ListGranted of a real client and checks them against the
// reference reader: a pair is allowed only when the answer was a 200 that
// the reference reads and whose one entry for exactly that pair says GRANT;
// a decision without a Cause is exactly the reference's; every other pair
// is a DENY with a Cause holding nothing of the token; the error is nil
// unless the answer was a 401; only gateway GRANT and DENY answers are
// cached; nothing panics.
func FuzzDecode(f *testing.F) {
	for _, body := range fzAuthorizeSeeds {
		f.Add(uint16(200), "application/json", []byte(body))
	}
	for _, seed := range []struct {
		status uint16
		body   string
	}{
		{204, ``},
		{302, fzAuthorizeSeeds[0]},
		{400, `{"error":"Bad Request","message":"the resources array cannot be empty"}`},
		{401, `{"error":"Unauthorized","message":"token ` + fzToken + ` expired"}`},
		{403, `{"error":"Forbidden","message":"no"}`},
		{429, fzAuthorizeSeeds[0]},
		{500, `{"error":"Internal Server Error","message":"` + fzToken + `"}`},
		{503, fzAuthorizeSeeds[0]},
	} {
		f.Add(seed.status, "application/json", []byte(seed.body))
	}

	f.Fuzz(func(t *testing.T, n uint16, contentType string, body []byte) {
		status := fzStatus(n)
		kinds := make(chan events.Kind, 8) // at most three: tokenSet, tokenExpired, tokenSet
		c := fzClient(t, status, contentType, body, pep.WithEventHandler(func(ev events.Event) { kinds <- ev.Kind }))
		res, err := c.CheckMany(t.Context(), fzAsk)
		require.Len(t, res.Decisions, 3)
		assert.Equal(t, uint64(1), c.Stats().GatewayRequests, "one request, never retried")

		if status == http.StatusUnauthorized {
			require.ErrorIs(t, err, pep.ErrUnauthorized)
			assert.NotContains(t, err.Error(), fzToken)
			for _, d := range res.Decisions {
				assert.False(t, d.Allowed())
				require.ErrorIs(t, d.Cause, pep.ErrUnauthorized)
			}
			assert.Zero(t, c.Stats().CacheEntries)
			// The call waits for tokenExpired's delivery only until its
			// deadline, which a loaded machine can pass first; a tokenSet
			// queued now is delivered after everything the refusal queued.
			c.SetToken(fzToken)
			assert.Equal(t, []events.Kind{events.TokenSet, events.TokenExpired, events.TokenSet}, fzEvents(t, kinds, 3),
				"tokenExpired is emitted once for the refused token")
			return
		}
		require.NoError(t, err, "only a 401 is an error")

		pairs, statuses, usable := refAuthorize(body)
		usable = usable && status == http.StatusOK && len(body) <= 1<<20
		cached := 0
		for _, d := range res.Decisions {
			want := ""
			if usable {
				want = refDecide(pairs, statuses, refPair{d.Resource, d.Scope})
			}
			if d.Allowed() {
				require.Equal(t, "GRANT", want, "%s/%s allowed; the reference says %q", d.Resource, d.Scope, want)
			}
			if d.Cause == nil || errors.Is(d.Cause, pep.ErrNotEvaluated) {
				require.NotEmpty(t, want, "%s/%s decided where the reference decides nothing", d.Resource, d.Scope)
				require.Equal(t, want, d.Status.String(), "%s/%s", d.Resource, d.Scope)
				if want != "ERROR" {
					cached++
				}
				continue
			}
			assert.Equal(t, pep.Deny, d.Status)
			assert.NotContains(t, d.Cause.Error(), fzToken)
			var re *pep.ResponseError
			require.ErrorAs(t, d.Cause, &re)
			assert.Equal(t, status, re.StatusCode)
			if status == http.StatusOK {
				require.ErrorIs(t, d.Cause, pep.ErrMalformedResponse)
			}
		}
		assert.Equal(t, res.Allowed(), res.Status == pep.Grant)
		assert.Equal(t, cached, c.Stats().CacheEntries, "only gateway GRANT and DENY answers are cached")

		// ListGranted reads the same answer for its wildcard queries.
		perms, err := fzClient(t, status, contentType, body, pep.WithCache(0, 0, 0)).ListGranted(t.Context(), fzList)
		if err != nil {
			assert.NotContains(t, err.Error(), fzToken)
		}
		for _, p := range perms {
			rp := refPair{p.Resource, p.Scope}
			require.True(t, usable, "%v listed from an answer the reference refuses", rp)
			require.True(t, fzCovered(rp), "%v listed but not asked for", rp)
			require.Equal(t, "GRANT", refDecide(pairs, statuses, rp), "%v listed", rp)
		}
	})
}

// fzOrganizationsSeeds are get-organizations answers of every kind.
var fzOrganizationsSeeds = []string{
	`{"status":true,"organization":{"userId":"u1","tenants":[{"tenantId":"t1","tenantName":"Acme","departments":[{"departmentId":"d1","departmentName":"Sales"}]}]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[{"tenantId":"t1"}]}}`,
	`{"status":false,"organization":{"userId":"u1","tenants":[]}}`,
	`{"status":false,"status":true,"organization":{"userId":"u1","tenants":[]}}`,
	`{"status":true,"Status":false,"organization":{"userId":"u1","tenants":[]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[{"tenantId":"t1","tenantſd":"t2"}]}}`,
	`{"status":true,"organization":{"userId":"u1","userıd":"admin","tenants":[{"tenantId":"t1","tenantıd":"t-other"}]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[{"tenantId":"t1","TenantId":"t2"}]}}`,
	`{"status":true,"organization":{"tenants":[]}}`,
	`{"status":true,"organization":{"userId":"","tenants":[]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[{"tenantName":"Acme"}]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[{"tenantId":"t1","departments":[{"departmentName":"x"}]}]}}`,
	`{"status":"true","organization":{"userId":"u1","tenants":[]}}`,
	`{"status":true,"organization":{"userId":1,"tenants":[]}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":null}}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[],"extra":{"a":1}},"more":[1,2]}`,
	`{"status":true,"organization":{"userId":"u1","tenants":[]}} x`,
	`{"status":true}`,
}

// FuzzOrganizations feeds arbitrary 200 answers to Organizations and checks
// them against the reference reader: the client returns an organization
// context only when the reference reads the same one; otherwise an error
// matching ErrMalformedResponse that holds nothing of the token.
func FuzzOrganizations(f *testing.F) {
	for _, s := range fzOrganizationsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		oc, err := fzClient(t, http.StatusOK, "application/json", body).Organizations(t.Context())
		user, tenants, ok := refOrganizations(body)
		ok = ok && len(body) <= 1<<20
		if err != nil {
			require.ErrorIs(t, err, pep.ErrMalformedResponse)
			assert.NotContains(t, err.Error(), fzToken)
			return
		}
		require.True(t, ok, "the client read an answer the reference refuses")
		assert.Equal(t, user, oc.UserID)
		require.Len(t, oc.Tenants, len(tenants))
		for i, tn := range tenants {
			got := oc.Tenants[i]
			assert.Equal(t, tn.id, got.ID)
			assert.Equal(t, tn.name, got.Name)
			require.NotNil(t, got.Departments, "a tenant without departments has an empty list")
			require.Len(t, got.Departments, len(tn.departments))
			for j, d := range tn.departments {
				assert.Equal(t, d[0], got.Departments[j].ID)
				assert.Equal(t, d[1], got.Departments[j].Name)
			}
		}
	})
}
