package grpcpep_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/orgauthz/orgauthz/grpcpep"
)

// TestMapRefusesNamesNotValidUTF8: a rule whose names JSON cannot carry
// as written is a wiring mistake, as an empty one is (a-dpop9 F2).
func TestMapRefusesNamesNotValidUTF8(t *testing.T) {
	t.Parallel()
	for _, r := range []grpcpep.Rule{{Resource: "orders\xff", Scopes: []string{"read"}}, {Resource: "orders", Scopes: []string{"\xfe"}}} {
		assert.PanicsWithValue(t, `grpcpep: Map's rule for "/s.S/M" needs a resource other than "" and "*" and at least one scope, none of them empty, all valid UTF-8`,
			func() { grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": r}) })
	}
	assert.NotPanics(t, func() {
		grpcpep.Map(map[string]grpcpep.Rule{"/s.S/M": {Resource: "bestellungen-ü", Scopes: []string{"\uFFFD"}}})
	})
}
