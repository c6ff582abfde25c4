package hangguard

import (
	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/pep"
)

// NewPep is pep.New with the hang guard (WithTimeout(Timeout)) before
// opts, so that a test about a timeout gives its own, which wins: the
// helper the tests of every package make their pep clients with, which
// Check accepts where it refuses pep.New.
func NewPep(gateway, realm, clientID string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, realm, clientID, append([]pep.Option{pep.WithTimeout(Timeout)}, opts...)...)
}

// NewAuthZEN is authzen.New with the hang guard before opts, as NewPep.
func NewAuthZEN(pdp string, opts ...authzen.Option) (*authzen.Client, error) {
	return authzen.New(pdp, append([]authzen.Option{authzen.WithTimeout(Timeout)}, opts...)...)
}
