package pep_test

// Member names that are case variants of the contract's names only under
// other readers' case rules (first found by the a-json4 attack, issue 25).

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// upperReader reads an authorize answer as a reader that matches member
// names case-insensitively by upper-casing them does (Go's strings.ToUpper,
// JavaScript's and Java's toUpperCase, Java's equalsIgnoreCase): the last
// member whose upper-cased name matches wins, as in a JS object or a map
// deserializer. It returns the status it reads for (resource, scope), or ""
// when it reads none.
// upper upper-cases s as JavaScript's and Java's toUpperCase do: Go's
// strings.ToUpper (simple mappings: ı → I) plus the full mappings of
// SpecialCasing.txt that matter here (ß → SS, ﬅ and ﬆ → ST).
func upper(s string) string {
	return strings.ToUpper(strings.NewReplacer("ß", "SS", "ﬅ", "ST", "ﬆ", "ST").Replace(s))
}

func upperReader(t *testing.T, body []byte, resource, scope string) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	_, _ = dec.Token() // {
	var perms json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
		if upper(tok.(string)) == "PERMISSIONS" {
			perms = v // the last one wins
		}
	}
	var entries []json.RawMessage
	require.NoError(t, json.Unmarshal(perms, &entries))
	status := ""
	for _, e := range entries {
		d := json.NewDecoder(bytes.NewReader(e))
		_, _ = d.Token()
		fields := map[string]string{}
		for d.More() {
			tok, err := d.Token()
			require.NoError(t, err)
			var s string
			require.NoError(t, d.Decode(&s))
			fields[upper(tok.(string))] = s // the last one wins
		}
		if fields["RESOURCE"] == resource && fields["SCOPE"] == scope {
			status = fields["STATUS"]
		}
	}
	return status
}

// TestCheckRefusesNonASCIIMemberNames: an authorize answer with a member
// name that is not ASCII is refused (fail closed), because readers
// disagree on its case: the dotless ı (U+0131) upper-cases to I, the
// ligature ﬆ (U+FB06) to ST in JS, Java, Python, ß folds to ss in Python's
// casefold, none of which Unicode simple folding (encoding/json) sees. A
// reader that matches names by upper-casing them reads DENY in each of
// these answers; the client must not read GRANT.
func TestCheckRefusesNonASCIIMemberNames(t *testing.T) {
	for name, body := range map[string]string{
		"dotless i in permissions": `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}],` +
			`"permıssıons":[{"resource":"orders","scope":"read","status":"DENY"}]}`,
		"sharp s in permissions (full case folding: Python's casefold)": `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT"}],` +
			`"permißions":[{"resource":"orders","scope":"read","status":"DENY"}]}`,
		"st ligature in status": `{"status":"GRANT","permissions":[{"resource":"orders","scope":"read","status":"GRANT","ﬆatus":"DENY"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, "DENY", upperReader(t, []byte(body), "orders", "read"),
				"a reader that upper-cases names reads DENY")
			c := fzClient(t, http.StatusOK, "application/json", []byte(body))
			d := checked(t, c, "orders", "read")
			require.False(t, d.Allowed(), "the client allows (%v, cause %v) where another reader of the same answer denies", d.Status, d.Cause)
		})
	}
}

// TestOrganizationsRefusesNonASCIIMemberNames: the same rule in a
// get-organizations answer: "userıd" and "tenantıd" (dotless ı) are read
// by an upper-casing reader as USERID and TENANTID, the last of each
// winning (another user, another tenant), so the client refuses the
// answer rather than read the first.
func TestOrganizationsRefusesNonASCIIMemberNames(t *testing.T) {
	body := `{"status":true,"organization":{"userId":"u1","userıd":"admin",` +
		`"tenants":[{"tenantId":"t1","tenantıd":"t-other"}]}}`
	require.Equal(t, "USERID", upper("userıd"))
	require.Equal(t, "TENANTID", upper("tenantıd"))
	oc, err := fzClient(t, http.StatusOK, "application/json", []byte(body)).Organizations(t.Context())
	require.Error(t, err, "the client reads user %q, tenants %+v, where an upper-casing reader reads admin and t-other", oc.UserID, oc.Tenants)
}
