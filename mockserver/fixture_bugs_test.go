package mockserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A fixture whose master realm defines the bootstrap client platform-admin
// as a public client (which has no service account) must be refused with a
// message naming it, not crash New with a nil pointer dereference.
func TestFixturePublicBootstrapClientIsRefused(t *testing.T) {
	t.Parallel()
	f := Fixture{Realms: []FixtureRealm{{
		Name:    "master",
		Clients: []FixtureClient{{ClientID: "platform-admin", Public: true}},
	}}}
	var err error
	require.NotPanics(t, func() { _, err = New(WithFixture(f)) })
	require.ErrorContains(t, err, `"platform-admin"`)
}

// A fixture file holding more than one JSON value must be refused: the
// loader refuses unknown fields so that a fixture never silently seeds less
// than it says, and a second object is silently ignored today.
func TestLoadFixtureFileRefusesTrailingData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fixture.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"realms":[{"name":"acme"}]} {"realms":[{"name":"globex"}]}`), 0o600))
	_, err := LoadFixtureFile(path)
	require.Error(t, err)
}
