package mockserver

// Run the fuzzer longer than its seeds (which every `go test` runs) with:
//
//	go test -run '^$' -fuzz '^FuzzFixture$' -fuzztime 10m ./mockserver
//
// Seeds live in testdata/fuzz/FuzzFixture and in the f.Add calls below
// (the acme example fixture among them).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// FuzzFixture feeds arbitrary bytes to the fixture loader, both as a file
// (LoadFixtureFile, strict about unknown fields) and decoded leniently into
// a Fixture for New. Whatever the input: nothing panics; the strict and the
// lenient reading agree whenever both succeed; a refused fixture is an error
// of the package; and an accepted one leaves a store whose invariants hold,
// with every realm and organization of the fixture present and the
// bootstrap platform administrator able to get a token.
func FuzzFixture(f *testing.F) {
	acme, err := os.ReadFile(filepath.Join("..", "examples", "fixtures", "acme.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(acme)
	for _, seed := range []string{
		`{}`,
		`{"realms":[]}`,
		`{"realms":[{"name":"acme"}]}`,
		`{"realms":[{"name":"acme"},{"name":"acme"}]}`,
		`{"realms":[{"name":""}]}`,
		`{"realms":[{"name":"master","roles":[{"name":"platform-admin"}],"clients":[{"clientId":"platform-admin","secret":"s"}]}]}`,
		`{"realms":[{"name":"master","users":[{"username":"service-account-platform-admin"}]}]}`,
		`{"realms":[{"name":"acme","roles":[{"name":"realm-admin","description":"restated","attributes":{"global":["true"]}}]}]}`,
		`{"realms":[{"name":"acme","roles":[{"name":"r"},{"name":"r"}]}]}`,
		`{"realms":[{"name":"acme","groups":[{"name":"g","roles":["ghost"]}]}]}`,
		`{"realms":[{"name":"acme","users":[{"username":"u","groups":["g"]}],"groups":[{"name":"g"}]}]}`,
		`{"realms":[{"name":"acme","clients":[{"clientId":"c","public":true,"resources":[{"name":"*"}]}]}]}`,
		`{"realms":[{"name":"acme","clients":[{"clientId":"c","secret":"s","resources":[{"name":"r","scopes":["a","a",""]}]}]}]}`,
		`{"realms":[{"name":"acme","clients":[{"clientId":"c","secret":"s","resources":[{"name":"r","scopes":["a"]}],"permissions":[{"name":"p","resource":"r","scopes":["a"],"users":["nobody"],"methods":["get"]}]}]}]}`,
		`{"realms":[{"name":"acme","clients":[{"clientId":"admin-cli","public":true}]}]}`,
		`{"realms":[{"name":"acme","clients":[{"clientId":"c","secret":"s"}],"organizations":[{"name":"O","alias":"o","applications":["c","c"]}]}]}`,
		`{"realms":[{"name":"acme","organizations":[{"name":"O","alias":"o"},{"name":"P","alias":"o"}]}]}`,
		`{"realms":[{"name":"acme","organizations":[{"name":" ","alias":"-bad"}]}]}`,
		`{"realms":[{"name":"acme","users":[{"username":"u"}],"roles":[{"name":"r"}],"organizations":[{"name":"O","alias":"o","attributes":{"k":null},"departments":[{"name":"D","alias":"d","users":["u","u"],"roles":["r"],"children":[{"name":"E","alias":"d"}]}]}]}]}`,
		`{"realms":[{"name":"acme","organizations":[{"name":"O","alias":"o","departments":[{"name":"","children":[{"name":"x"}]}]}]}]}`,
		`{"realms":[{"name":"acme","groups":[{"name":"g"}],"organizations":[{"name":"O","alias":"o","groups":["g"]},{"name":"P","alias":"p","groups":["g"]}]}]}`,
		`{"platformAdmins":[{"clientId":"ops","secret":"s"},{"clientId":"ops","secret":"t"}]}`,
		`{"platformAdmins":[{"clientId":"platform-admin","secret":"mine"}]}`,
		`{"platformAdmins":[{"clientId":"","secret":""}]}`,
		`{"realms":null,"platformAdmins":null}`,
		`{"realms":[null]}`,
		`{"realms":[{"name":"acme"}]} {"realms":[]}`,
		`{"realms":[{"name":"acme","unknown":1}]}`,
		`[]`, `null`, ``, `{"realms":{}}`,
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fixture.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		strict, strictErr := LoadFixtureFile(path)
		if strictErr != nil && !strings.HasPrefix(strictErr.Error(), "mockserver: ") {
			t.Fatalf("LoadFixtureFile error without the package prefix: %v", strictErr)
		}
		var lenient Fixture
		if err := json.Unmarshal(data, &lenient); err != nil {
			return
		}
		if strictErr == nil && !reflect.DeepEqual(strict, lenient) {
			t.Fatalf("LoadFixtureFile read %+v, the JSON says %+v", strict, lenient)
		}

		s, err := New(WithFixture(lenient), WithIssuer("http://fuzz.test"), es256Tokens)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "mockserver: ") {
				t.Fatalf("New error without the package prefix: %v", err)
			}
			return
		}
		if err := s.store.CheckInvariants(); err != nil {
			t.Fatalf("the fixture loaded into an inconsistent store: %v\nfixture: %s", err, data)
		}
		if _, ok := s.store.Lookup(store.MasterRealm); !ok {
			t.Fatalf("no master realm")
		}
		for _, fr := range lenient.Realms {
			err = s.store.Read(fr.Name, func(rm *store.Realm) error {
				for _, fo := range fr.Organizations {
					if _, ok := rm.OrgByAlias[fo.Alias]; !ok {
						t.Fatalf("realm %q: organization %q of the fixture is missing", fr.Name, fo.Alias)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("realm %q of the fixture is missing: %v", fr.Name, err)
			}
		}
		if s.AdminSecret() == "" {
			t.Fatal("no bootstrap admin secret")
		}
		if _, err := s.IssueToken(store.MasterRealm, store.ServiceAccountPrefix+bootstrapClient); err != nil {
			t.Fatalf("the bootstrap platform administrator has no token: %v", err)
		}
	})
}
