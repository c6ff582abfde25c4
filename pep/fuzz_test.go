package pep_test

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 10m ./pep
//
// Seeds live in testdata/fuzz/FuzzDecode (one file per case, `go test fuzz
// v1` format) and in the f.Add calls below; a crasher found by the fuzzer
// is written there too and becomes a regression test once committed.

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/events"
	"github.com/orgauthz/orgauthz/pep"
)

// fzToken is the token of every fuzzed call; the gateway may echo it, and
// no error text may then contain it (ARCHITECTURE.md section 3 rule 7).
const fzToken = "fz-secret-token.eyJzdWIiOiJmdXp6In0.c2lnbmF0dXJl"

// fzAsk is the fixed request of the fuzzer: three pairs of two resources.
var fzAsk = []pep.Resource{
	{Name: "orders", Scopes: []string{"read", "write"}},
	{Name: "invoices", Scopes: []string{"read"}},
}

// fzPair is one resource-scope pair, as the oracle sees it.
type fzPair struct{ resource, scope string }

// fzWireBody is the oracle's own reading of an authorize answer
// (ARCHITECTURE.md section 4); it shares nothing with the client's types.
type fzWireBody struct {
	Status      string `json:"status"`
	Permissions []struct {
		Resource string `json:"resource"`
		Scope    string `json:"scope"`
		Status   string `json:"status"`
	} `json:"permissions"`
}

// fzVerdict is what the oracle expects for one requested pair.
type fzVerdict struct {
	answered bool   // the client takes the gateway's word for the pair
	status   string // the gateway's status for it, when answered
}

// fzOracle decides, independently of the client, what a 200 body says about
// each requested pair. The body is usable only when it is at most 1 MiB, is
// exactly one JSON object of the wire shape, and every status in it (top
// level and per pair) is GRANT, DENY or ERROR. A requested pair is then
// answered only when the body lists it, with a single status however often
// it is listed.
func fzOracle(body []byte) (usable bool, verdicts map[fzPair]fzVerdict) {
	valid := map[string]bool{"GRANT": true, "DENY": true, "ERROR": true}
	var w fzWireBody
	if len(body) > 1<<20 || json.Unmarshal(body, &w) != nil || !valid[w.Status] || fzAmbiguous(body) {
		return false, nil
	}
	seen := map[fzPair][]string{}
	for _, p := range w.Permissions {
		if !valid[p.Status] {
			return false, nil
		}
		k := fzPair{p.Resource, p.Scope}
		seen[k] = append(seen[k], p.Status)
	}
	verdicts = map[fzPair]fzVerdict{}
	for _, r := range fzAsk {
		for _, s := range r.Scopes {
			k := fzPair{r.Name, s}
			statuses := seen[k]
			if len(statuses) == 0 {
				continue // missing: fails closed
			}
			agree := true
			for _, st := range statuses {
				agree = agree && st == statuses[0]
			}
			if agree {
				verdicts[k] = fzVerdict{answered: true, status: statuses[0]}
			}
		}
	}
	return true, verdicts
}

// fzAmbiguous reports whether an object of a well-formed body names one of
// the members a decision reads twice, or in another case than the wire
// format's (encoding/json would fold it onto the member): readers may then
// disagree on the answer, so the body grants nothing.
func fzAmbiguous(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	var value func() bool // reads one value; true when it is ambiguous
	value = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			named := map[string]bool{}
			for dec.More() {
				nameTok, _ := dec.Token()
				name, _ := nameTok.(string)
				for _, m := range []string{"status", "permissions", "resource", "scope"} {
					if strings.EqualFold(name, m) && (name != m || named[m]) {
						return true
					}
				}
				named[name] = true
				if value() {
					return true
				}
			}
			_, _ = dec.Token() // '}'
		case json.Delim('['):
			for dec.More() {
				if value() {
					return true
				}
			}
			_, _ = dec.Token() // ']'
		}
		return false
	}
	return value()
}

// fzStatus maps the fuzzer's number onto an HTTP status from 100 to 599.
func fzStatus(n uint16) int { return 100 + int(n)%500 }

// FuzzDecode feeds arbitrary gateway answers (status, content type, body) to
// a real client asking for a fixed set of pairs, and checks the fail-closed
// contract against an independent oracle: a pair is allowed only when the
// answer was a 200 whose body explicitly granted exactly that pair without
// a conflicting duplicate; every other pair is a DENY with a Cause; the
// error is nil unless the answer was a 401; only gateway GRANT and DENY
// answers are cached; no error text holds the token; nothing panics.
func FuzzDecode(f *testing.F) {
	grantAll := `{"status":"GRANT","permissions":[` +
		`{"resource":"orders","scope":"read","status":"GRANT"},` +
		`{"resource":"orders","scope":"write","status":"GRANT"},` +
		`{"resource":"invoices","scope":"read","status":"GRANT"}]}`
	for _, seed := range []struct {
		status      uint16
		contentType string
		body        string
	}{
		{200, "application/json", grantAll},
		{200, "application/json", `{"status":"DENY","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"write","status":"DENY"},{"resource":"invoices","scope":"read","status":"ERROR"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[]}`},
		{200, "application/json", `{"status":"GRANT"}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"read","status":"DENY"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"read","status":"GRANT"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"*","scope":"","status":"GRANT"},{"resource":"orders","scope":"","status":"GRANT"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"Orders","scope":"read","status":"GRANT"},{"resource":"orders","scope":"READ","status":"GRANT"},{"resource":"orders ","scope":"read","status":"GRANT"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"grant"}]}`},
		{200, "application/json", `{"status":"OK","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}]}`},
		{200, "application/json", `{"STATUS":"GRANT","Permissions":[{"Resource":"orders","SCOPE":"read","status":"GRANT"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"DENY","status":"GRANT"}]}`},
		{200, "application/json", `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"DENY","st\u0061tus":"GRANT"}]}`},
		{200, "application/json", grantAll + ` {}`},
		{200, "application/json", `{"status":"GRANT","permissions":{"orders":"read"}}`},
		{200, "application/json", `{"status":"GRANT","permissions":[null,{"resource":"orders","scope":"read","status":"GRANT"}]}`},
		{200, "application/json", `{"error":"Forbidden","message":"` + fzToken + `"}`},
		{200, "text/html", `<html>maintenance</html>`},
		{200, "text/plain", grantAll},
		{200, "", ``},
		{200, "", `null`},
		{204, "", ``},
		{302, "text/html", grantAll},
		{400, "application/json", `{"error":"Bad Request","message":"the resources array cannot be empty"}`},
		{401, "application/json", `{"error":"Unauthorized","message":"token ` + fzToken + ` expired"}`},
		{403, "application/json", `{"error":"Forbidden","message":"no"}`},
		{429, "application/json", grantAll},
		{500, "application/json", `{"error":"Internal Server Error","message":"` + fzToken + `"}`},
		{502, "text/html", `<html>bad gateway</html>`},
		{503, "application/json", grantAll},
	} {
		f.Add(seed.status, seed.contentType, []byte(seed.body))
	}

	f.Fuzz(func(t *testing.T, n uint16, contentType string, body []byte) {
		status := fzStatus(n)
		mock := httpmock.NewMockTransport()
		mock.RegisterResponder(http.MethodPost,
			"https://gateway.fuzz/realms/acme/authorization-decision-provider/authorize",
			func(*http.Request) (*http.Response, error) {
				resp := httpmock.NewBytesResponse(status, body)
				if contentType != "" {
					resp.Header.Set("Content-Type", contentType)
				}
				return resp, nil
			})
		var expired int
		c, err := pep.New("https://gateway.fuzz", "acme", "orders-api",
			pep.WithHTTPClient(&http.Client{Transport: mock}),
			pep.WithRetry(0, 0, 0), pep.WithBreaker(0, 0),
			pep.WithEventHandler(func(ev events.Event) {
				if ev.Kind == events.TokenExpired {
					expired++
				}
			}))
		require.NoError(t, err)
		c.SetToken(fzToken)

		res, err := c.CheckMany(t.Context(), fzAsk)
		require.Len(t, res.Decisions, 3)
		assert.Equal(t, uint64(1), c.Stats().GatewayRequests, "one request, never retried")

		if status == http.StatusUnauthorized {
			require.ErrorIs(t, err, pep.ErrUnauthorized)
			assert.NotContains(t, err.Error(), fzToken)
			assert.Equal(t, pep.Deny, res.Status)
			for _, d := range res.Decisions {
				assert.False(t, d.Allowed())
				assert.Equal(t, pep.Deny, d.Status)
				require.ErrorIs(t, d.Cause, pep.ErrUnauthorized)
			}
			assert.Zero(t, c.Stats().CacheEntries)
			assert.Equal(t, 1, expired, "tokenExpired is emitted once for the refused token")
			return
		}
		require.NoError(t, err, "only a 401 is an error")
		assert.Zero(t, expired)

		usable, verdicts := fzOracle(body)
		usable = usable && status == http.StatusOK
		wantOverall, cached := pep.Grant, 0
		for _, d := range res.Decisions {
			v := verdicts[fzPair{d.Resource, d.Scope}]
			if !usable || !v.answered {
				assert.False(t, d.Allowed(), "%s/%s allowed by an unusable answer", d.Resource, d.Scope)
				assert.Equal(t, pep.Deny, d.Status)
				require.Error(t, d.Cause, "%s/%s denied without a Cause", d.Resource, d.Scope)
				assert.NotContains(t, d.Cause.Error(), fzToken)
				var re *pep.ResponseError
				require.ErrorAs(t, d.Cause, &re)
				assert.Equal(t, status, re.StatusCode)
				if status == http.StatusOK {
					require.ErrorIs(t, d.Cause, pep.ErrMalformedResponse)
				}
				assert.Equal(t, status >= 500, errors.Is(d.Cause, pep.ErrUnavailable))
				wantOverall = pep.Deny
				continue
			}
			require.NoError(t, d.Cause, "%s/%s", d.Resource, d.Scope)
			assert.Equal(t, v.status, d.Status.String(), "%s/%s", d.Resource, d.Scope)
			assert.Equal(t, v.status == "GRANT", d.Allowed(), "%s/%s", d.Resource, d.Scope)
			switch v.status {
			case "DENY":
				wantOverall = pep.Deny
				cached++
			case "ERROR":
				if wantOverall == pep.Grant {
					wantOverall = pep.Error
				}
			case "GRANT":
				cached++
			}
		}
		assert.Equal(t, wantOverall, res.Status)
		assert.Equal(t, wantOverall == pep.Grant, res.Allowed())
		assert.Equal(t, cached, c.Stats().CacheEntries, "only gateway GRANT and DENY answers are cached")
	})
}
