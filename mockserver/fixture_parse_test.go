package mockserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/mockserver"
)

// TestParseFixtureSaysWhere checks that a fixture that is not valid JSON,
// or holds a value of the wrong type, is refused with the line and column a
// person editing the file needs, and the path of the field at fault.
func TestParseFixtureSaysWhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"bare word", "{\n  \"realms\": [\n    {\"name\": acme}\n  ]\n}",
			"mockserver: fixture: line 3, column 14: invalid character 'a' at start of value"},
		{"trailing comma", "{\n  \"realms\": [\n    {\"name\": \"acme\",}\n  ]\n}",
			"mockserver: fixture: line 3, column 20: invalid character ',' at start of value"},
		{"string for an array", "{\"realms\": [\n {\"name\": \"acme\",\n  \"users\": [{\"username\": \"u\", \"roles\": \"viewer\"}]}]}",
			`mockserver: fixture: line 3, column 40: realms[].users[].roles: a JSON string where an array is expected`},
		{"number for a string", "{\"realms\": [\n\t{\"name\": 12}]}",
			"mockserver: fixture: line 2, column 11: realms[].name: a JSON number where a string is expected"},
		{"object for an array", "{\"realms\": [],\n \"platformAdmins\": {}}",
			"mockserver: fixture: line 2, column 20: platformAdmins: a JSON object where an array is expected"},
		{"not an object", "[]",
			"mockserver: fixture: line 1, column 1: the fixture: a JSON array where an object is expected"},
		{"truncated", "{\"realms\": [\n",
			"mockserver: fixture: line 2, column 1: unexpected end of input (a closing bracket or brace missing?)"},
		{"second object", "{}\n  {}",
			"mockserver: fixture: line 2, column 3: data after the fixture object"},
		{"unknown field", `{"realms": [{"nmae": "acme"}]}`,
			`mockserver: fixture: line 1, column 14: realms[].nmae: unknown member: realms[] takes only "name", "roles", "groups", "users", "clients" and "organizations"`},
		// The one strict JSON rule of the module (internal/strictjson): a
		// case-insensitive reader would take these for other fixtures.
		{"a member twice", "{\"realms\": [{\"name\": \"acme\",\n  \"name\": \"initech\"}]}",
			`mockserver: fixture: line 2, column 3: realms[].name: is given twice`},
		{"a field in another case", `{"Realms": [{"name": "acme"}]}`,
			`mockserver: fixture: line 1, column 2: Realms: member names are case-sensitive: the field is "realms"`},
		{"two members differing only in case", `{"realms": [{"name": "acme", "users": [], "USERS": [{"username": "mallory"}]}]}`,
			`mockserver: fixture: line 1, column 43: realms[].USERS: differs only in case from "users": members are matched case-insensitively`},
		{"a non-ASCII name", `{"realms": [{"name": "acme", "users": [], "uſers": [{"username": "mallory"}]}]}`,
			`mockserver: fixture: line 1, column 43: realms[].uſers: member name has a letter that readers take for ASCII letters in different ways (such as ı, ſ or ß), so it could name a known member`},
		{"a map key twice", `{"realms": [{"name": "acme", "roles": [{"name": "r", "attributes": {"k": ["a"], "k": ["b"]}}]}]}`,
			`mockserver: fixture: line 1, column 81: realms[].roles[].attributes.k: is given twice`},
		{"empty", "",
			"mockserver: fixture: empty input: a fixture is a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mockserver.ParseFixture([]byte(tc.in))
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestParseFixtureReadsTheExample checks that the example fixture parses
// into what it says.
func TestParseFixtureReadsTheExample(t *testing.T) {
	t.Parallel()
	data := testkit.Must(os.ReadFile(filepath.Join("..", "examples", "fixtures", "acme.json")))(t)
	f := testkit.Must(mockserver.ParseFixture(data))(t)
	require.Len(t, f.Realms, 1)
	require.Equal(t, "acme", f.Realms[0].Name)
	testkit.Must(mockserver.New(mockserver.WithFixture(f)))(t)
}

// TestWithFixtureFileSaysWhere checks that New, given a broken fixture
// file, names the file, the line and the column.
func TestWithFixtureFileSaysWhere(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(path, []byte("{\n  \"realms\": [\n    {\"name\": \"acme\"\n  ]\n}\n"), 0o600))
	_, err := mockserver.New(mockserver.WithFixtureFile(path))
	require.EqualError(t, err, "mockserver: fixture "+path+": line 4, column 3: invalid character ']' after object value (expecting ',' or '}')")
}
