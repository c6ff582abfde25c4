package store

import (
	"crypto"
	"iter"
	"sort"
	"strings"
)

// Names every realm carries, as Keycloak's do.
const (
	// RoleRealmAdmin grants realm management.
	RoleRealmAdmin = "realm-admin"
	// RoleOfflineAccess is Keycloak's default offline_access role.
	RoleOfflineAccess = "offline_access"
	// RolePlatformAdmin, in the master realm, grants platform administration.
	RolePlatformAdmin = "platform-admin"
	// ClientAdminCLI is the public client of the password grant.
	ClientAdminCLI = "admin-cli"
	// ServiceAccountPrefix prefixes the username of a client's service account.
	ServiceAccountPrefix = "service-account-"
	// MasterRealm is the realm of platform administration.
	MasterRealm = "master"
)

// RSAKey returns the realm's RSA signing key and its key id, made with gen
// on first use: an RSA key costs tens of milliseconds to make, and a realm
// whose tokens are ES256 and that never signs an ID token never needs one.
// It signs the realm's ID tokens and, by default, its access tokens. It is
// safe to call without the realm's lock; a failed gen is tried again on the
// next call. Once made, the key never changes.
func (r *Realm) RSAKey(gen func() (crypto.Signer, string, error)) (crypto.Signer, string, error) {
	if k := r.rsaKey.Load(); k != nil {
		return k.signer, k.kid, nil
	}
	r.rsaKeyMu.Lock()
	defer r.rsaKeyMu.Unlock()
	if k := r.rsaKey.Load(); k != nil {
		return k.signer, k.kid, nil
	}
	k, kid, err := gen()
	if err != nil {
		return nil, "", err
	}
	r.rsaKey.Store(&keyPair{signer: k, kid: kid})
	return k, kid, nil
}

// LoadRSAKey returns the realm's RSA signing key and its key id if RSAKey
// made it, without ever making it (a token check must not make a key for
// a token that names it): ok is false before. It takes no lock.
func (r *Realm) LoadRSAKey() (key crypto.Signer, kid string, ok bool) {
	k := r.rsaKey.Load()
	if k == nil {
		return nil, "", false
	}
	return k.signer, k.kid, true
}

// keyPair is a signing key and its key id.
type keyPair struct {
	signer crypto.Signer
	kid    string
}

// notIDForm refuses a name in the form of an id (isIDForm): readers take
// a user, a client, a role or a group by its id or its name (AuthZEN's
// subject.id, policy/evaluate's client, fixtures), and an alias by its id
// or its alias, so no name may be read as another thing's id.
func notIDForm(what, name string) error {
	if isIDForm(name) {
		return Invalid("%s %q has the form of an id (a UUID), which readers would take as one: choose another", what, name)
	}
	return nil
}

// AddRole creates a realm role, or returns ErrConflict when the name is taken.
func (r *Realm) AddRole(name, description string, attrs Attributes) (*Role, error) {
	if err := notIDForm("role name", name); err != nil {
		return nil, err
	}
	if _, ok := r.RoleByName[name]; ok {
		return nil, Conflict("role %q already exists", name)
	}
	ro := &Role{ID: r.newID("role", name), Name: name, Description: description, Attributes: attrs.Clone()}
	r.addRole(ro)
	return ro, nil
}

// addRole adds a new role to the realm's maps and lists.
func (r *Realm) addRole(ro *Role) {
	r.Roles[ro.ID] = ro
	r.RoleByName[ro.Name] = ro.ID
	r.roleList = insertSorted(r.roleList, ro, cmpRole)
	if ro.IsGlobal() {
		r.globalRoles[ro.ID] = struct{}{}
	}
}

func cmpRole(a, b *Role) int { return byName(a.Name, a.ID, b.Name, b.ID) }

// DescribeRole replaces the description and attributes of a role (the
// fixture loader restates the default roles with it); the role may become
// global or stop being global.
func (r *Realm) DescribeRole(id, description string, attrs Attributes) error {
	ro, ok := r.Roles[id]
	if !ok {
		return NotFound("role %q", id)
	}
	ro.Description, ro.Attributes = description, attrs.Clone()
	if ro.IsGlobal() {
		r.globalRoles[id] = struct{}{}
	} else {
		delete(r.globalRoles, id)
	}
	return nil
}

// AddGroup creates a realm group holding roleIDs. Group names are unique
// within a realm (they are paths at the top level).
func (r *Realm) AddGroup(name string, attrs Attributes, roleIDs []string) (*Group, error) {
	if err := notIDForm("group name", name); err != nil {
		return nil, err
	}
	if _, taken := r.GroupByName[name]; taken {
		return nil, Conflict("group %q already exists", name)
	}
	set, err := r.roleSet(roleIDs)
	if err != nil {
		return nil, err
	}
	g := &Group{ID: r.newID("group", name), Name: name, Path: "/" + name, Attributes: attrs.Clone(), RoleIDs: set}
	r.Groups[g.ID] = g
	r.GroupByName[name] = g.ID
	return g, nil
}

// AddUser creates a user from u (ID, role and group sets are filled in).
// The username must be free and every role and group must exist.
func (r *Realm) AddUser(u User, roleIDs, groupIDs []string) (*User, error) {
	if strings.TrimSpace(u.Username) == "" {
		return nil, Invalid("username is empty")
	}
	if err := notIDForm("username", u.Username); err != nil {
		return nil, err
	}
	if _, ok := r.UserByName[u.Username]; ok {
		return nil, Conflict("user %q already exists", u.Username)
	}
	// An ownership property names its owner by username or email (the
	// decision's owns): each such string belongs to one user.
	if _, ok := r.userByEmail[u.Username]; ok {
		return nil, Conflict("username %q is another user's email, which an ownership property would read as that user", u.Username)
	}
	if u.Email != "" {
		if _, ok := r.userByEmail[u.Email]; ok {
			return nil, Conflict("email %q is another user's", u.Email)
		}
		if _, ok := r.UserByName[u.Email]; ok && u.Email != u.Username {
			return nil, Conflict("email %q is another user's username, which an ownership property would read as that user", u.Email)
		}
	}
	roles, err := r.roleSet(roleIDs)
	if err != nil {
		return nil, err
	}
	var groups Set // nil when empty: most users of a large realm have none
	for _, id := range groupIDs {
		if groups == nil {
			groups = make(Set, len(groupIDs))
		}
		if _, ok := r.Groups[id]; !ok {
			return nil, NotFound("group %q", id)
		}
		groups[id] = struct{}{}
	}
	nu := u
	// A service account is its client's, whatever its username: a user
	// another fixture names "service-account-<clientId>" is another
	// party, and gets another id.
	if u.ServiceAccountOf != "" {
		nu.ID = r.newID("service account", u.ServiceAccountOf)
	} else {
		nu.ID = r.newID("user", u.Username)
	}
	nu.RoleIDs = roles
	nu.GroupIDs = groups
	r.addUser(&nu)
	return &nu, nil
}

// addUser adds a new user to the realm's maps and its ordered ids.
func (r *Realm) addUser(u *User) {
	r.addUserHandle(u)
	r.Users[u.ID] = u
	r.UserByName[u.Username] = u.ID
	if u.Email != "" {
		if r.userByEmail == nil {
			r.userByEmail = map[string]string{}
		}
		r.userByEmail[u.Email] = u.ID
	}
	r.userIDs.insert(u.ID, strings.Compare)
}

// UserIDsAfter yields the ids of the realm's users that sort after id
// (byte order), in order; "" yields them all. Finding the first costs
// O(log n) in the realm's users and each further id O(1), so a page read
// from a cursor costs the page, not the realm. Read it under the realm's
// lock, and stop before changing the realm.
func (r *Realm) UserIDsAfter(id string) iter.Seq[string] {
	return r.userIDs.After(id, strings.Compare)
}

// AddClient creates a client from c. A confidential client also gets a
// service account user ("service-account-<clientId>") holding
// serviceAccountRoleIDs. Permissions must already hold ids.
func (r *Realm) AddClient(c Client, serviceAccountRoleIDs []string) (*Client, error) {
	if strings.TrimSpace(c.ClientID) == "" {
		return nil, Invalid("clientId is empty")
	}
	if err := notIDForm("clientId", c.ClientID); err != nil {
		return nil, err
	}
	if _, ok := r.ClientByID[c.ClientID]; ok {
		return nil, Conflict("client %q already exists", c.ClientID)
	}
	saName := ServiceAccountPrefix + c.ClientID
	if !c.Public {
		if _, ok := r.UserByName[saName]; ok {
			return nil, Conflict("user %q already exists", saName)
		}
	}
	if _, err := r.roleSet(serviceAccountRoleIDs); err != nil {
		return nil, err
	}
	nc := c
	nc.ID = r.newID("client", c.ClientID)
	if !c.Public {
		sa, err := r.AddUser(User{Username: saName, ServiceAccountOf: nc.ID, CreatedAt: r.CreatedAt}, serviceAccountRoleIDs, nil)
		if err != nil {
			return nil, err
		}
		nc.ServiceAccountUserID = sa.ID
	}
	r.Clients[nc.ID] = &nc
	r.ClientByID[nc.ClientID] = nc.ID
	return &nc, nil
}

// EnsureDefaults gives the realm what every Keycloak realm has: the roles
// realm-admin and offline_access and the public client admin-cli.
func (r *Realm) EnsureDefaults() {
	for _, name := range []string{RoleRealmAdmin, RoleOfflineAccess} {
		if _, ok := r.RoleByName[name]; !ok {
			_, _ = r.AddRole(name, "", nil) // cannot clash: checked above
		}
	}
	if _, ok := r.ClientByID[ClientAdminCLI]; !ok {
		_, _ = r.AddClient(Client{ClientID: ClientAdminCLI, Public: true}, nil)
	}
}

// UserNamed returns the user with that username.
func (r *Realm) UserNamed(username string) (*User, bool) {
	u, ok := r.Users[r.UserByName[username]]
	return u, ok
}

// ClientNamed returns the client with that clientId.
func (r *Realm) ClientNamed(clientID string) (*Client, bool) {
	c, ok := r.Clients[r.ClientByID[clientID]]
	return c, ok
}

// RoleNamed returns the role with that name.
func (r *Realm) RoleNamed(name string) (*Role, bool) {
	ro, ok := r.Roles[r.RoleByName[name]]
	return ro, ok
}

// AddEffectiveRoles adds to dst the user's direct realm roles and the roles
// of the user's groups.
func (r *Realm) AddEffectiveRoles(u *User, dst Set) { r.TraceEffectiveRoles(u, dst, nil) }

// TraceEffectiveRoles is AddEffectiveRoles telling trace, when it is not
// nil, each role it adds and how the user holds it (a direct role: the
// zero RoleVia; a group's: Via.Group). A role held two ways is told twice.
// It is the one walk of a user's realm and group roles: AddEffectiveRoles
// is this walk untraced, so that an explanation of a decision tells the
// roles the decision counted.
func (r *Realm) TraceEffectiveRoles(u *User, dst Set, trace RoleTracer) {
	for id := range u.RoleIDs {
		dst[id] = struct{}{}
		if trace != nil {
			trace(id, RoleVia{})
		}
	}
	for gid := range u.GroupIDs {
		if g, ok := r.Groups[gid]; ok {
			for id := range g.RoleIDs {
				dst[id] = struct{}{}
				if trace != nil {
					trace(id, RoleVia{Group: g})
				}
			}
		}
	}
}

// RoleVia is how a user holds a role: directly (the zero RoleVia), as a
// member of Group, or through an assignment to Dept, whose organization
// (Dept.OrgID) links the role, or, when Template is set, whose template
// grants it.
type RoleVia struct {
	Group    *Group
	Dept     *Department
	Template bool
}

// RoleTracer is told each role a walk of a user's roles adds, with how the
// user holds it (TraceEffectiveRoles, TraceOrgRoles). It runs under the
// realm's lock and must not keep the pointers of via past it.
type RoleTracer func(roleID string, via RoleVia)

// RoleNames returns the names of the roles in ids, sorted.
func (r *Realm) RoleNames(ids Set) []string {
	out := make([]string, 0, len(ids))
	for id := range ids {
		if ro, ok := r.Roles[id]; ok {
			out = append(out, ro.Name)
		}
	}
	sort.Strings(out)
	return out
}

// roleSet checks that every id names a role and returns them as a set,
// nil when there are none.
func (r *Realm) roleSet(ids []string) (Set, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	set := make(Set, len(ids))
	for _, id := range ids {
		if _, ok := r.Roles[id]; !ok {
			return nil, NotFound("role %q", id)
		}
		set[id] = struct{}{}
	}
	return set, nil
}
