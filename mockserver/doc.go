// Package mockserver is the reference server of the Organization and
// Authorization Service: organizations, departments, assignments, roles,
// groups, applications, templates, authorization decisions, organization
// context, platform administration and a small OIDC/DPoP token issuer, all in
// memory and safe for concurrent use.
//
// Users run it in integration tests (see package mockservertest) or as a
// binary (mockserver/cmd/mockserver). Where the service specification leaves
// a behaviour open, the server follows Keycloak's conventions, since the real
// service runs as a Keycloak extension. The module's docs/reference-server.md
// describes every endpoint; this comment gives what a test writer needs.
//
// # Realms and tokens
//
// A realm is a tenant with its own users, roles, groups, clients,
// organizations and signing keys. The realm "master" always exists and holds
// the platform administrators; every realm has the roles realm-admin and
// offline_access and the public client admin-cli.
//
// The token endpoint, POST /realms/{realm}/protocol/openid-connect/token,
// answers the client_credentials grant (client_id and client_secret, in the
// form or by HTTP Basic: a token for the client's service account,
// "service-account-<clientId>") and the password grant (client_id admin-cli,
// username, password). A request with a valid DPoP proof gets a token bound
// to the proof's key, which must then be sent as "Authorization: DPoP" with a
// fresh proof on every request; sent as Bearer it is refused.
// Server.IssueToken mints the same tokens without a password. Access tokens
// are RS256, as Keycloak's (WithAccessTokenAlgorithm("ES256") makes them
// ES256); discovery lists the algorithms and the JWKS the keys, so that
// go-oidc's Verifier checks them. Every protected route checks the
// signature, the issuer, that it is an access token, the expiry, that it
// was not revoked and that the realm is live; a failure is a 401 with a
// WWW-Authenticate challenge. A token of another realm, or of a realm that
// does not exist, is a 401 too.
//
// Keycloak's userinfo (.../protocol/openid-connect/userinfo), revocation
// (.../revoke, RFC 7009) and introspection (.../token/introspect, RFC 7662)
// endpoints answer as Keycloak's do: a client revokes an access token
// issued to it and every route refuses it until it expires; only a
// confidential client introspects. Without a shared store
// (WithReplayStore) revocations are the process's memory, so a server
// serves only the tokens it minted itself and refuses, as revoked, every
// token another process minted (with WithKeySeed a restarted server, or
// another replica, has the same keys).
//
// Browsers may call the server from the origins a fixture client lists in
// WebOrigins and those of WithCORSOrigins (CORS): every path answers
// OPTIONS, preflights from such an origin with the CORS headers, others
// with 403.
//
// The organization API (/admin/realms/{realm}/organizations/...) needs the
// role realm-admin (or the client role realm-management/manage-realm) in a
// token of that realm, else 403. The decision provider takes any valid token
// of the realm. Platform administration (/admin/...) needs platform-admin in
// a master token.
//
// # Decisions
//
// POST /realms/{realm}/authorization-decision-provider/authorize answers
// each requested resource-scope pair, in request order without duplicates.
// The subject's roles are its direct realm roles, its groups' roles and, for
// each of its department assignments, the roles linked to that department's
// organization plus the department's template roles; a token with an
// organization claim counts only the assignments in that organization.
// Roles are read from the store at decision time (a repeated request of a
// caller is answered from a cache of answers that no write of the realm
// survives). A permission of the client
// applies to a pair when it names the resource and the scope (no scopes: all
// of the resource's); it grants when the subject has one of its roles, is in
// one of its groups or is one of its users, and, when it lists methods, the
// request context's method is one of them (a request without a context has
// no method). A pair is GRANT when an applicable permission grants, DENY
// when none does, ERROR when the client does not define the resource or
// scope; the answer's status is DENY if any pair is DENY, else ERROR if any
// is ERROR, else GRANT. A resource with no scopes means all of its scopes,
// the resource "*" every resource of the client. Requests over 100 resources
// or 50 scopes in a resource, an empty resource list or a missing context
// are 400s.
//
// Why was a decision denied? POST
// /admin/realms/{realm}/clients/{client}/authz/resource-server/policy/evaluate
// (realm management; Keycloak's policy evaluation path) explains one for any
// user: each pair's status, every permission that applies with the facts it
// matched or missed, and the user's roles with their sources. The code that
// decides /authorize records it as it decides, so it is what the decision
// saw. ExplainDecision gives it as text, and WithDenialLog logs it for every
// DENY and ERROR of /authorize.
//
// # AuthZEN
//
// The same engine answers the OpenID AuthZEN Authorization API 1.0 (an
// extension): POST /realms/{realm}/access/v1/evaluation and
// /access/v1/evaluations (execute_all, deny_on_first_deny,
// permit_on_first_permit), with metadata at
// /realms/{realm}/.well-known/authzen-configuration and
// /.well-known/authzen-configuration/realms/{realm}. The PEP is a client's
// service account asking about that client's resources: subject {type
// "user", id: a user id or username}, action {name: a scope}, resource
// {type: a resource, id: the instance}. A permission's OwnerProperty names
// the resource property that must hold the subject's username or email.
//
// The Search APIs (/access/v1/search/subject, /resource and /action) list
// what an evaluation of each result would allow, a page at a time: a page
// token is opaque, signed by the server and good only for the very request
// it was given for. A subject search lists users in id order and pages by
// cursor: each page resumes after the last id of the page before, so a page
// costs the users it reads, not the realm, and a change between pages
// lists nothing twice and skips no user who still matches. Its page has no
// total, which would cost an evaluation of every user (AuthZEN 1.0 makes it
// optional); resource and action searches, bounded by the client's
// resources and scopes, give it.
//
// # Configuration and faults
//
// GET, PUT and PATCH /admin/config read and write the platform configuration:
// tokenLifetimeSeconds (default 300), maxPageSize (100), dpopNonceRequired
// (false), and the fault injection of decision-provider calls,
// decisionLatencyMs (0 to 60000) and decisionFailureRate (0 to 1, the share
// of calls answered 503). PUT replaces the whole configuration: a key the
// body leaves out goes back to its default. PATCH changes only the keys it
// names. An unknown key or a value out of range is a 400 and changes nothing.
// mockservertest's PatchConfig, PutConfig and SetFaults send them.
//
// # Fixtures
//
// A Fixture seeds the server: realms with roles, groups, users, clients
// (their resources and permissions) and organizations (their linked roles,
// groups and applications, and department trees with assigned users), and
// the platform administration clients of master. Everything is referred to
// by name; the server chooses the ids. An organization's Roles are what
// gives users roles through it: every user assigned to any of its
// departments holds them. Its Groups are links only; a group's members hold
// its roles through their own Groups, linked or not. ParseFixture reads a
// JSON fixture strictly (an unknown field, a member given twice or named in
// another case is an error; every error is reported by line and column),
// and New refuses a fixture that names something it does not define.
//
// # Web UI
//
// WithWebUI (the binary's -webui) serves server-rendered pages under /ui/
// for a realm's administrators: the organizations as department trees with
// their members, users with their effective roles and where each comes
// from, clients' resources and permissions, and an evaluator that shows a
// decision with its reasons, both from the decision engine. A user signs in
// through the server's login form and must hold realm management; the
// session is a signed cookie (HttpOnly, SameSite=Strict, Secure over
// https), forms carry a CSRF token, and cross-origin posts are refused.
// docs/reference-server.md describes it.
//
// # Errors and limits
//
// Every non-2xx answer has the body {"error": "<reason phrase>", "message":
// "..."}, with details naming the fields on a 400 (a web UI page answers a
// browser the same as an HTML page). An error repeats a value or a name
// the caller sent only when the server already knows it as public: an id
// (a UUID), the wildcard "*", a word of the API (a route's segment, a
// member's or parameter's name, an enumerated value) or a realm's name
// (realms are public; a name within a realm -- a user, a client, an alias
// -- is public to that realm's callers only, which an error's writer
// cannot tell, except an AuthZEN evaluation's, which names its own realm's);
// a details[].field only when each segment is a member's name of the API
// or such a name. Anything else -- an unknown
// value, however well-shaped, a token or a secret the server made sent in
// the wrong place among it -- is described by its length: "(a value of 14
// bytes, not repeated)". Malformed or oversized
// input is a 4xx, never a 500. A request body is at most 1 MiB, a page 100
// items, a department tree 32 levels, a department template 1,000 nodes.
//
// # Extensions
//
// Beyond the service specification the server has: the identity endpoints
// (discovery, JWKS, the authorization, token, userinfo, revocation and
// introspection endpoints) and IssueToken; CORS; listing the
// organizations of a realm; reading one linked role; departments in each
// tenant of get-organizations; GET /admin/tenants/{tenantId};
// GET and PATCH /admin/config and its fault-injection keys; GET
// /openapi.json (see OpenAPI); the web UI; and the fixture format itself. A client
// that relies on them may not find them in every deployment of the service.
package mockserver
