// Package mockserver is the reference server of the Organization and
// Authorization Service: organizations, departments, assignments, roles,
// groups, applications, templates, authorization decisions, organization
// context, platform administration and a small OIDC/DPoP token issuer, all in
// memory.
//
// Users run it in integration tests (see package mockservertest) or as a
// binary (mockserver/cmd/mockserver). Its semantics follow the service
// specification and, where that is silent, Keycloak's conventions.
package mockserver
