package mockserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orgauthz/orgauthz/internal/strictjson"
	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// Fixture is the seed of a server (the fixture format is the reference
// server's own, not part of the service specification): realms with their
// roles, groups, users, clients and organizations, and the platform
// administration clients of the master realm. Users, groups, roles and
// clients are referenced by name; the server assigns ids.
type Fixture struct {
	Realms         []FixtureRealm         `json:"realms"`
	PlatformAdmins []FixturePlatformAdmin `json:"platformAdmins"`
}

// FixtureRealm is one realm of a fixture. Every realm also gets the roles
// realm-admin and offline_access and the public client admin-cli.
type FixtureRealm struct {
	Name          string                `json:"name"`
	Roles         []FixtureRole         `json:"roles"`
	Groups        []FixtureGroup        `json:"groups"`
	Users         []FixtureUser         `json:"users"`
	Clients       []FixtureClient       `json:"clients"`
	Organizations []FixtureOrganization `json:"organizations"`
}

// FixtureRole is a realm role; attribute global=["true"] makes it global.
type FixtureRole struct {
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
}

// FixtureGroup is a realm group whose members hold Roles.
type FixtureGroup struct {
	Name       string              `json:"name"`
	Roles      []string            `json:"roles"`
	Attributes map[string][]string `json:"attributes"`
}

// FixtureUser is a realm user with direct Roles and Groups (by name).
type FixtureUser struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	Email    string   `json:"email"`
	Roles    []string `json:"roles"`
	Groups   []string `json:"groups"`
}

// FixtureClient is a client: confidential with a Secret (it then has a
// service account holding ServiceAccountRoles), or Public. Resources and
// Permissions are what the decision endpoint evaluates for it.
// RedirectURIs are the client's registered redirection endpoints for the
// authorization code flow (an extension): absolute http(s) URIs without a
// fragment, which an authorization request's redirect_uri must equal
// exactly (no wildcard, no normalization). A client without any cannot use
// the authorization endpoint. WebOrigins are the origins browsers may call
// the realm from on the client's behalf (CORS), as Keycloak's webOrigins:
// an origin scheme://host[:port] (lower case, no path), "+" for the
// origins of its RedirectURIs, "*" for any origin.
type FixtureClient struct {
	ClientID            string              `json:"clientId"`
	Secret              string              `json:"secret"`
	Public              bool                `json:"public"`
	RedirectURIs        []string            `json:"redirectUris"`
	WebOrigins          []string            `json:"webOrigins"`
	ServiceAccountRoles []string            `json:"serviceAccountRoles"`
	Resources           []FixtureResource   `json:"resources"`
	Permissions         []FixturePermission `json:"permissions"`
}

// FixtureResource is a resource of a client with its scopes.
type FixtureResource struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// FixturePermission grants Scopes of Resource (every scope when empty) to
// Roles, Groups and Users (by name), only for the listed Methods of the
// request context when Methods is set, and, when OwnerProperty is set, only
// on a resource instance whose property of that name holds the subject's
// username or email. Resource instances and their properties come only
// with AuthZEN requests (docs/reference-server.md); on the authorize route
// a permission with OwnerProperty never grants.
type FixturePermission struct {
	Name          string   `json:"name"`
	Resource      string   `json:"resource"`
	Scopes        []string `json:"scopes"`
	Roles         []string `json:"roles"`
	Groups        []string `json:"groups"`
	Users         []string `json:"users"`
	Methods       []string `json:"methods"`
	OwnerProperty string   `json:"ownerProperty"`
}

// FixtureOrganization is an organization with its linked Roles and Groups,
// the clients of its Applications (registered in the realm's catalog and
// assigned to it) and its department tree. Its Roles are what users get
// through it: every user assigned to any of its departments holds them in
// decisions. Its Groups are links only and give nobody a role: a group's
// members hold the group's roles through their own FixtureUser.Groups,
// whether the group is linked or not.
type FixtureOrganization struct {
	Name         string              `json:"name"`
	Alias        string              `json:"alias"`
	Description  string              `json:"description"`
	Attributes   map[string][]string `json:"attributes"`
	Roles        []string            `json:"roles"`
	Groups       []string            `json:"groups"`
	Applications []string            `json:"applications"`
	Departments  []FixtureDepartment `json:"departments"`
}

// FixtureDepartment is a department with its assigned Users (by username),
// the Roles its members receive (as a department made from a template
// would; the service's API gives a department roles only through a
// template, so Roles is an extension), and its Children.
type FixtureDepartment struct {
	Name        string              `json:"name"`
	Alias       string              `json:"alias"`
	Description string              `json:"description"`
	Attributes  map[string][]string `json:"attributes"`
	Users       []string            `json:"users"`
	Roles       []string            `json:"roles"`
	Children    []FixtureDepartment `json:"children"`
}

// FixturePlatformAdmin is a confidential client of the master realm whose
// service account holds platform-admin.
type FixturePlatformAdmin struct {
	ClientID string `json:"clientId"`
	Secret   string `json:"secret"`
}

// LoadFixtureFile reads the JSON fixture at path and decodes it as
// ParseFixture does; its errors name the file.
func LoadFixtureFile(path string) (Fixture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Fixture{}, fmt.Errorf("mockserver: fixture: %w", err)
	}
	return parseFixture(b, "fixture "+path)
}

// ParseFixture decodes a JSON fixture, as strictly as the server reads
// request bodies (internal/strictjson): a member given twice, two members
// whose names differ only in case, a member that names a field in another
// case, an unknown member (so that a misspelt key does not silently seed
// less than intended) and anything after the fixture object are refused.
// An error names where the JSON went wrong by line and column (1-based,
// the column counted in bytes) and, for a member or a value of the wrong
// type, by its path (realms[].users[].roles). It does not check that the
// names the fixture refers to are defined; New does that.
func ParseFixture(data []byte) (Fixture, error) {
	return parseFixture(data, "fixture")
}

// parseFixture decodes data; what names the input in errors.
func parseFixture(data []byte, what string) (Fixture, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Fixture{}, fmt.Errorf("mockserver: %s: empty input: a fixture is a JSON object", what)
	}
	var f Fixture
	if err := strictjson.Unmarshal(data, &f, strictjson.RejectUnknownMembers()); err != nil {
		return Fixture{}, fmt.Errorf("mockserver: %s: %s", what, describeJSONError(data, err))
	}
	return f, nil
}

// describeJSONError says what went wrong and where, by line and column.
func describeJSONError(data []byte, err error) string {
	var (
		me  *strictjson.MemberError
		te  *strictjson.TypeError
		syn *strictjson.SyntacticError
	)
	at := func(off int64) string {
		line, col := lineColumn(data, off)
		return fmt.Sprintf("line %d, column %d: ", line, col)
	}
	switch {
	case errors.As(err, &me):
		return at(me.Offset) + me.Error()
	case errors.As(err, &te):
		field := te.Path
		if field == "" {
			field = "the fixture"
		}
		return at(te.Offset) + fmt.Sprintf("%s: a JSON %s where %s is expected", field, strictjson.KindName(te.Found), jsonKind(te.Want))
	case errors.As(err, &syn) && errors.Is(syn.Err, strictjson.ErrTrailingData):
		return at(syn.ByteOffset) + "data after the fixture object"
	case errors.As(err, &syn) && errors.Is(syn.Err, io.ErrUnexpectedEOF):
		return at(int64(len(data))) + "unexpected end of input (a closing bracket or brace missing?)"
	case errors.As(err, &syn) && syn.Err != nil:
		return at(syn.ByteOffset) + syn.Err.Error()
	}
	return err.Error()
}

// lineColumn returns the 1-based line and byte column of data[off]; an
// offset past the end names the position just after the last byte.
func lineColumn(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// jsonKind names what a Go type takes in JSON, for error messages.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// fixtureError names the fixture entry at fault.
func fixtureError(format string, args ...any) error {
	return fmt.Errorf("mockserver: fixture: "+format, args...)
}

// notUTF8At returns where v, a fixture or a part of one named at, holds
// a string that is not valid UTF-8 (a member by its JSON name, an element
// by its index, a map's entry by its key), or "". A Go Fixture may hold
// such bytes, which a file fixture cannot (JSON decoding replaces them):
// two names differing only in them are two users to the store but one to
// every JSON text that shows them.
func notUTF8At(v reflect.Value, at string) string {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return at
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if w := notUTF8At(v.Field(i), at+"."+name); w != "" {
				return w
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if w := notUTF8At(v.Index(i), fmt.Sprintf("%s[%d]", at, i)); w != "" {
				return w
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if !utf8.ValidString(it.Key().String()) {
				return at + " (a key)"
			}
			if w := notUTF8At(it.Value(), fmt.Sprintf("%s[%q]", at, it.Key().String())); w != "" {
				return w
			}
		}
	}
	return ""
}

// load builds every realm of f (plus master) and installs them in the store
// only when all of them built; it returns the bootstrap admin secret.
func (s *Server) load(f Fixture, adminSecret string) (string, error) {
	if at := notUTF8At(reflect.ValueOf(f), "fixture"); at != "" {
		return "", fixtureError("%s is not valid UTF-8: a name is what a fixture object is (its id derives from it), and JSON, which a fixture file and the API speak, cannot carry it", at)
	}
	now := s.now().UTC()
	realms := map[string]*store.Realm{}
	for i := range f.Realms {
		fr := &f.Realms[i]
		if fr.Name == "" {
			return "", fixtureError("realms[%d]: name is empty", i)
		}
		if _, dup := realms[fr.Name]; dup {
			return "", fixtureError("realm %q is defined twice", fr.Name)
		}
		r, err := buildRealm(fr, now, s.keys)
		if err != nil {
			return "", err
		}
		realms[fr.Name] = r
	}

	master, ok := realms[store.MasterRealm]
	if !ok {
		r, err := newKeyedRealm(store.MasterRealm, now, s.keys)
		if err != nil {
			return "", err
		}
		master = r
		realms[store.MasterRealm] = r
	}
	adminSecret, err := seedPlatformAdmins(master, f.PlatformAdmins, adminSecret)
	if err != nil {
		return "", err
	}

	all := make([]*store.Realm, 0, len(realms))
	for _, r := range realms {
		r.SeedIDs(nil)
		all = append(all, r)
	}
	if err := s.store.Install(all...); err != nil {
		return "", fixtureError("%v", err)
	}
	return adminSecret, nil
}

// seedPlatformAdmins adds the platform-admin role, the fixture's platform
// administration clients and the bootstrap client to master, and returns
// the bootstrap client's secret: adminSecret when set, else the fixture's,
// else a random one.
func seedPlatformAdmins(master *store.Realm, admins []FixturePlatformAdmin, adminSecret string) (string, error) {
	pa, ok := master.RoleNamed(store.RolePlatformAdmin)
	if !ok {
		pa, _ = master.AddRole(store.RolePlatformAdmin, "platform administration", nil)
	}
	for i, a := range admins {
		if a.ClientID == "" || a.Secret == "" {
			return "", fixtureError("platformAdmins[%d]: clientId and secret are required", i)
		}
		secret := a.Secret
		if a.ClientID == bootstrapClient && adminSecret != "" {
			secret = adminSecret
		}
		if _, err := master.AddClient(store.Client{ClientID: a.ClientID, Secret: secret}, []string{pa.ID}); err != nil {
			return "", fixtureError("platform admin %q: %v", a.ClientID, err)
		}
	}

	c, ok := master.ClientNamed(bootstrapClient)
	if !ok {
		if adminSecret == "" {
			adminSecret = randomSecret(24)
		}
		if _, err := master.AddClient(store.Client{ClientID: bootstrapClient, Secret: adminSecret}, []string{pa.ID}); err != nil {
			return "", fixtureError("platform admin %q: %v", bootstrapClient, err)
		}
		return adminSecret, nil
	}
	// The fixture defines it, among platformAdmins (it is then a platform
	// admin with the right secret already) or as a client of its master
	// realm: make sure it is a platform admin and takes adminSecret.
	sa, ok := master.Users[c.ServiceAccountUserID]
	if !ok {
		return "", fixtureError("realm %q: client %q is the bootstrap platform administrator and needs a service account; make it confidential (give it a secret)", store.MasterRealm, bootstrapClient)
	}
	if sa.RoleIDs == nil {
		sa.RoleIDs = store.Set{}
	}
	sa.RoleIDs[pa.ID] = struct{}{}
	if adminSecret != "" {
		c.Secret = adminSecret
	}
	return c.Secret, nil
}

// bootstrapClient is the platform administration client every server has.
const bootstrapClient = "platform-admin"

// newKeyedRealm returns an empty realm with a signing key from keys and
// the defaults every realm has.
func newKeyedRealm(name string, now time.Time, keys keySource) (*store.Realm, error) {
	key, kid, err := keys.signing(name)
	if err != nil {
		return nil, err
	}
	r := store.NewRealm(name, now)
	r.SigningKey, r.KeyID = key, kid
	// With a key seed, replicas give each object of the fixture an id
	// derived from what it is (its kind and name), so that a token's sub
	// names the same user at each, and no other user at any, whatever
	// else their fixtures say; load returns to random ids before the
	// realm serves.
	r.SeedIDs(keys.seed)
	r.EnsureDefaults()
	return r, nil
}

// realmBuilder builds one realm of a fixture, resolving the names the
// fixture uses to the ids the store assigns.
type realmBuilder struct {
	r      *store.Realm
	now    time.Time
	groups map[string]string // group name -> id (the store indexes groups by id only)
}

// buildRealm builds one realm of a fixture, refusing any name it cannot
// resolve.
func buildRealm(fr *FixtureRealm, now time.Time, keys keySource) (*store.Realm, error) {
	r, err := newKeyedRealm(fr.Name, now, keys)
	if err != nil {
		return nil, err
	}
	b := &realmBuilder{r: r, now: now, groups: map[string]string{}}

	for _, ro := range fr.Roles {
		if strings.TrimSpace(ro.Name) == "" {
			return nil, b.errorf("a role has no name")
		}
		if def, ok := r.RoleNamed(ro.Name); ok && (ro.Name == store.RoleRealmAdmin || ro.Name == store.RoleOfflineAccess) {
			// A fixture may restate the default roles, e.g. to describe them.
			_ = r.DescribeRole(def.ID, ro.Description, ro.Attributes) // def exists
			continue
		}
		if _, err := r.AddRole(ro.Name, ro.Description, ro.Attributes); errors.Is(err, store.ErrConflict) {
			return nil, b.errorf("role %q is defined twice", ro.Name)
		} else if err != nil {
			return nil, b.errorf("%v", err)
		}
	}

	for _, g := range fr.Groups {
		if strings.TrimSpace(g.Name) == "" {
			return nil, b.errorf("a group has no name")
		}
		ids, err := b.roleIDs(g.Roles, fmt.Sprintf("group %q", g.Name))
		if err != nil {
			return nil, err
		}
		ng, err := r.AddGroup(g.Name, g.Attributes, ids)
		if errors.Is(err, store.ErrConflict) {
			return nil, b.errorf("group %q is defined twice", g.Name)
		} else if err != nil {
			return nil, b.errorf("%v", err)
		}
		b.groups[g.Name] = ng.ID
	}

	for _, u := range fr.Users {
		owner := fmt.Sprintf("user %q", u.Username)
		if strings.TrimSpace(u.Username) == "" {
			return nil, b.errorf("a user has no username")
		}
		rids, err := b.roleIDs(u.Roles, owner)
		if err != nil {
			return nil, err
		}
		gids, err := b.groupIDs(u.Groups, owner)
		if err != nil {
			return nil, err
		}
		if _, err := r.AddUser(store.User{Username: u.Username, Email: u.Email, Password: u.Password, CreatedAt: now}, rids, gids); err != nil {
			return nil, b.errorf("user %q: %v", u.Username, err)
		}
	}

	for _, fc := range fr.Clients {
		c, err := b.client(fc)
		if err != nil {
			return nil, err
		}
		sa, err := b.roleIDs(fc.ServiceAccountRoles, fmt.Sprintf("client %q", fc.ClientID))
		if err != nil {
			return nil, err
		}
		if _, err := r.AddClient(c, sa); err != nil {
			return nil, b.errorf("client %q: %v", fc.ClientID, err)
		}
	}

	for _, fo := range fr.Organizations {
		if err := b.organization(fo); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// errorf names the realm, then the fixture entry at fault.
func (b *realmBuilder) errorf(format string, args ...any) error {
	return fixtureError("realm %q: %s", b.r.Name, fmt.Sprintf(format, args...))
}

// ids resolves names through index (one of the realm's name -> id maps), in
// order. An unknown name is an error naming owner, the entry that lists it,
// and kind, what it should be ("role", "group", "user").
func (b *realmBuilder) ids(index map[string]string, kind string, names []string, owner string) ([]string, error) {
	ids := make([]string, 0, len(names))
	for _, n := range names {
		id, ok := index[n]
		if !ok {
			return nil, b.errorf("%s: %s %q is not defined", owner, kind, n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// roleIDs resolves the role names owner lists.
func (b *realmBuilder) roleIDs(names []string, owner string) ([]string, error) {
	return b.ids(b.r.RoleByName, "role", names, owner)
}

// groupIDs resolves the group names owner lists.
func (b *realmBuilder) groupIDs(names []string, owner string) ([]string, error) {
	return b.ids(b.groups, "group", names, owner)
}

// client resolves a fixture client's resources and permissions.
func (b *realmBuilder) client(fc FixtureClient) (store.Client, error) {
	owner := fmt.Sprintf("client %q", fc.ClientID)
	if strings.TrimSpace(fc.ClientID) == "" {
		return store.Client{}, b.errorf("a client has no clientId")
	}
	if !fc.Public && fc.Secret == "" {
		return store.Client{}, b.errorf("%s: a confidential client needs a secret (or set public)", owner)
	}
	c := store.Client{ClientID: fc.ClientID, Secret: fc.Secret, Public: fc.Public}
	for _, u := range fc.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return c, b.errorf("%s: redirect URI %q: %v", owner, u, err)
		}
		if slices.Contains(c.RedirectURIs, u) {
			return c, b.errorf("%s: redirect URI %q is listed twice", owner, u)
		}
		c.RedirectURIs = append(c.RedirectURIs, u)
	}
	scopes := map[string]map[string]bool{}
	for _, res := range fc.Resources {
		if res.Name == "" || res.Name == "*" {
			return c, b.errorf("%s: resource name %q is not allowed", owner, res.Name)
		}
		if _, dup := scopes[res.Name]; dup {
			return c, b.errorf("%s: resource %q is defined twice", owner, res.Name)
		}
		set := map[string]bool{}
		for _, sc := range res.Scopes {
			if sc == "" {
				return c, b.errorf("%s: resource %q has an empty scope", owner, res.Name)
			}
			set[sc] = true
		}
		scopes[res.Name] = set
		c.Resources = append(c.Resources, store.ClientResource{Name: res.Name, Scopes: fxDedupe(res.Scopes)})
	}
	for _, p := range fc.Permissions {
		po := fmt.Sprintf("%s: permission %q", owner, p.Name)
		set, ok := scopes[p.Resource]
		if !ok {
			return c, b.errorf("%s: resource %q is not defined", po, p.Resource)
		}
		for _, sc := range p.Scopes {
			if !set[sc] {
				return c, b.errorf("%s: scope %q is not defined on resource %q", po, sc, p.Resource)
			}
		}
		cp := store.ClientPermission{Name: p.Name, Resource: p.Resource, Scopes: fxDedupe(p.Scopes), Methods: fxUpper(p.Methods), OwnerProperty: p.OwnerProperty}
		var err error
		if cp.Roles, err = b.roleIDs(p.Roles, po); err != nil {
			return c, err
		}
		if cp.Groups, err = b.groupIDs(p.Groups, po); err != nil {
			return c, err
		}
		if cp.Users, err = b.ids(b.r.UserByName, "user", p.Users, po); err != nil {
			return c, err
		}
		c.Permissions = append(c.Permissions, cp)
	}
	return c, nil
}

// checkRedirectURI refuses what cannot be a registered redirection
// endpoint (RFC 6749 section 3.1.2): a URI that is not an absolute http or
// https URL with a host, or that has a fragment or user information. Only
// printable ASCII is allowed (a URI has no other characters, RFC 3986), and
// no "*": registered URIs match exactly, so a wildcard would only mislead.
func checkRedirectURI(raw string) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] >= 0x7f {
			return errors.New("only printable ASCII without spaces is allowed")
		}
	}
	if strings.Contains(raw, "*") {
		return errors.New("wildcards are not supported: redirect URIs match exactly")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("not a URI")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("the scheme must be http or https")
	case u.Host == "" || u.Opaque != "":
		return errors.New("the URI must name a host")
	case u.User != nil:
		return errors.New("user information is not allowed")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("a fragment is not allowed")
	}
	return nil
}

// organization adds an organization, its links and its department tree
// to the realm through the store's own operations, so that every index
// stays consistent.
func (b *realmBuilder) organization(fo FixtureOrganization) error {
	r := b.r
	owner := fmt.Sprintf("organization %q", fo.Alias)
	org, err := r.CreateOrganization(store.OrgSpec{Name: fo.Name, Alias: fo.Alias, Description: fo.Description,
		Attributes: store.Attributes(fo.Attributes)}, b.now)
	if err != nil {
		return b.errorf("%s: %v", owner, err)
	}
	roles, err := b.roleIDs(fo.Roles, owner)
	if err != nil {
		return err
	}
	for _, id := range roles {
		if _, err := r.LinkRole(org.ID, id); err != nil {
			return b.errorf("%s: %v", owner, err)
		}
	}
	for _, g := range fo.Groups {
		id, ok := b.groups[g]
		if !ok {
			return b.errorf("%s: group %q is not defined", owner, g)
		}
		if _, err := r.LinkGroup(org.ID, id); err != nil {
			return b.errorf("%s: group %q: %v", owner, g, err)
		}
	}
	for _, clientID := range fo.Applications {
		if _, ok := r.ClientByID[clientID]; !ok {
			return b.errorf("%s: application client %q is not defined", owner, clientID)
		}
		if _, err := r.ApplicationByClientID(clientID); err != nil {
			if _, err := r.RegisterApplication(store.AppSpec{ClientID: clientID}, b.now); err != nil {
				return b.errorf("%s: application %q: %v", owner, clientID, err)
			}
		}
		if _, _, err := r.AssignApplication(org.ID, clientID); err != nil {
			return b.errorf("%s: application %q: %v", owner, clientID, err)
		}
	}
	return b.departments(fo.Departments, org.ID, "", owner)
}

// departments creates list, with their subtrees and assigned users, under
// parentID ("" for the roots) in organization orgID; owner names the
// organization. Each department costs its own checks: loading is linear in
// the size of the fixture.
func (b *realmBuilder) departments(list []FixtureDepartment, orgID, parentID, owner string) error {
	for _, fd := range list {
		do := fmt.Sprintf("%s: department %q", owner, fd.Alias)
		if fd.Alias == "" {
			do = fmt.Sprintf("%s: department %q", owner, fd.Name)
		}
		tr, err := b.roleIDs(fd.Roles, do)
		if err != nil {
			return err
		}
		d, err := b.r.CreateDepartment(orgID, parentID, store.DeptSpec{Name: fd.Name, Alias: fd.Alias,
			Description: fd.Description, Attributes: store.Attributes(fd.Attributes), TemplateRoleIDs: tr}, b.now)
		if err != nil {
			return b.errorf("%s: %v", do, err)
		}
		for _, un := range fd.Users {
			uid, ok := b.r.UserByName[un]
			if !ok {
				return b.errorf("%s: user %q is not defined", do, un)
			}
			if _, _, err := b.r.Assign(uid, d.ID, b.now); err != nil {
				return b.errorf("%s: user %q: %v", do, un, err)
			}
		}
		if err := b.departments(fd.Children, orgID, d.ID, owner); err != nil {
			return err
		}
	}
	return nil
}

// fxDedupe returns list without repeats, in first-seen order.
func fxDedupe(list []string) []string {
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// fxUpper returns list upper-cased (HTTP methods).
func fxUpper(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = strings.ToUpper(v)
	}
	return out
}
