package store

import (
	"crypto"
	"sync"
	"sync/atomic"
	"time"
)

// Attributes maps a key to a list of values, as Keycloak attributes do.
type Attributes map[string][]string

// Clone returns a deep copy; a nil map clones to an empty one.
func (a Attributes) Clone() Attributes {
	out := make(Attributes, len(a))
	for k, v := range a {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Set is a set of ids.
type Set map[string]struct{}

// Realm is one tenant: its identity objects and its organization hierarchy.
// Maps are keyed by id unless their name says otherwise.
//
// Once a realm is in a Store, its fields are read inside Store.Read and
// written inside Store.Write, except those that never change after it is
// installed: Name, CreatedAt, SigningKey, KeyID and the tenant's ID, which
// the identity side reads without the realm's lock. Decommissioned is safe
// to call at any time.
type Realm struct {
	mu   sync.RWMutex // the realm's lock, taken by Store.Read and Store.Write
	gone atomic.Bool  // decommissioned
	// gen counts the realm's writes (Generation); it changes under mu
	// only.
	gen  uint64
	pace pace // the realm's account with its store's pacer (fair.go)

	Name      string
	CreatedAt time.Time

	// Tenant is set for realms provisioned through platform administration.
	Tenant *Tenant

	// SigningKey is the realm's P-256 key, which signs its access tokens
	// when they are ES256; KeyID names it in the JWKS.
	SigningKey crypto.Signer
	KeyID      string

	// rsaKey signs the realm's ID tokens and its RS256 access tokens;
	// made on first use (RSAKey) under rsaKeyMu, then never changed.
	rsaKeyMu sync.Mutex
	rsaKey   atomic.Pointer[keyPair]
	// ids makes the ids the realm assigns while it is built from a
	// seeded fixture (SeedIDs); nil means random ones (NewID).
	ids *idSeq

	// Users is written only by AddUser, which also keeps userIDs, the
	// same ids in order.
	Users      map[string]*User
	UserByName map[string]string // username -> id
	// userByEmail finds a user by email (AddUser keeps it), so that no
	// string an ownership property can hold names two users.
	userByEmail map[string]string
	Roles       map[string]*Role
	RoleByName  map[string]string // role name -> id
	Groups      map[string]*Group
	Clients     map[string]*Client
	ClientByID  map[string]string // clientId -> id

	Orgs       map[string]*Organization
	OrgByAlias map[string]string // alias -> org id
	// Depts holds every department of the realm by id; orgs indexes them
	// per organization (see orgIndex).
	Depts map[string]*Department
	// h holds every assignment twice, once from each end, with the time
	// it was made, between user and department handles (handles.go): at
	// 100,000 assignments they are most of a large realm's heap, which
	// the garbage collector marks while other realms' decisions run, so
	// they hold no pointer. AssignmentsByUser and AssignmentsByDept copy
	// them out by id.
	h           handles
	assignments int // how many, for AssignmentCount

	OrgRoles  map[string]Set    // org id -> linked role ids
	OrgGroups map[string]Set    // org id -> linked group ids
	GroupOrg  map[string]string // group id -> the org it is linked to
	OrgApps   map[string]Set    // org id -> assigned application ids
	AppOrgs   map[string]Set    // application id -> the org ids it is assigned to
	Apps      map[string]*Application
	AppByID   map[string]string // clientId -> application id
	PropTmpls map[string]*PropertyTemplate
	DeptTmpls map[string]*DepartmentTemplate

	// orgs holds each organization's index; orgList the organizations
	// sorted by name then id.
	orgs    map[string]*orgIndex
	orgList []*Organization
	// GroupByName maps a group name to its id.
	GroupByName map[string]string
	// roleList holds the realm roles sorted by name then id; globalRoles
	// the ids of the global ones.
	roleList    []*Role
	globalRoles Set
	// userIDs holds the keys of Users in byte order (UserIDsAfter), so
	// that a subject search reads a page from a cursor instead of sorting
	// every id of the realm for each page.
	userIDs SortedList[string]
}

// NewRealm returns an empty realm with every map allocated.
func NewRealm(name string, now time.Time) *Realm {
	return &Realm{
		pace:        pace{turn: make(chan struct{}, 1)},
		Name:        name,
		CreatedAt:   now,
		Users:       map[string]*User{},
		UserByName:  map[string]string{},
		Roles:       map[string]*Role{},
		RoleByName:  map[string]string{},
		Groups:      map[string]*Group{},
		Clients:     map[string]*Client{},
		ClientByID:  map[string]string{},
		Orgs:        map[string]*Organization{},
		OrgByAlias:  map[string]string{},
		Depts:       map[string]*Department{},
		OrgRoles:    map[string]Set{},
		OrgGroups:   map[string]Set{},
		GroupOrg:    map[string]string{},
		OrgApps:     map[string]Set{},
		AppOrgs:     map[string]Set{},
		Apps:        map[string]*Application{},
		AppByID:     map[string]string{},
		PropTmpls:   map[string]*PropertyTemplate{},
		DeptTmpls:   map[string]*DepartmentTemplate{},
		orgs:        map[string]*orgIndex{},
		GroupByName: map[string]string{},
		globalRoles: Set{},
	}
}

// Tenant is the platform-administration record of a provisioned realm.
type Tenant struct {
	ID               string
	Plan             string
	AdminEmail       string
	CreatedAt        time.Time
	DecommissionedAt time.Time
}

// User is a realm user, or the service account of a client.
type User struct {
	ID       string
	Username string
	Email    string
	Password string
	RoleIDs  Set // direct realm roles; nil when none
	GroupIDs Set // nil when none
	// ServiceAccountOf is the client id (not clientId) whose service account
	// this user is; empty for people.
	ServiceAccountOf string
	CreatedAt        time.Time

	h uint32 // the user's handle in its realm (handles.go); 0 until added
}

// Role is a realm role. A global role carries the attribute global=["true"].
type Role struct {
	ID          string
	Name        string
	Description string
	Attributes  Attributes
}

// IsGlobal reports whether the role is a global role.
func (r *Role) IsGlobal() bool {
	for _, v := range r.Attributes["global"] {
		if v == "true" {
			return true
		}
	}
	return false
}

// Group is a realm group; its members hold its roles.
type Group struct {
	ID         string
	Name       string
	Path       string
	Attributes Attributes
	RoleIDs    Set
}

// Client is an OAuth client of the realm, with the resources and permissions
// the decision endpoint evaluates for it.
type Client struct {
	ID       string // internal id
	ClientID string // the public clientId
	Secret   string
	Public   bool // public clients (admin-cli) have no secret
	// ServiceAccountUserID is the user that client_credentials tokens name.
	ServiceAccountUserID string
	// RedirectURIs are the registered redirection endpoints of the
	// authorization code flow; a redirect_uri must equal one exactly.
	RedirectURIs []string
	Resources    []ClientResource
	Permissions  []ClientPermission
}

// ClientResource is a resource the client defines, with its scopes.
type ClientResource struct {
	Name   string
	Scopes []string
}

// ClientPermission grants scopes of one resource to roles, groups or users,
// optionally only for some HTTP methods of the request context. Roles,
// Groups and Users hold ids.
type ClientPermission struct {
	Name     string
	Resource string
	Scopes   []string // empty: every scope of the resource
	Roles    []string
	Groups   []string
	Users    []string
	Methods  []string
	// OwnerProperty, when set, limits the permission to a resource
	// instance whose property of that name holds the subject's username or
	// email (AuthZEN resource properties; the authorize route names no
	// instance, so such a permission never grants there).
	OwnerProperty string
}

// Organization is a root container of departments inside a realm.
type Organization struct {
	ID          string
	Name        string
	Alias       string
	Description string
	Attributes  Attributes
	CreatedAt   time.Time
}

// Department is a node of an organization's tree. ParentID is the
// organization id for root departments.
type Department struct {
	ID          string
	OrgID       string
	ParentID    string
	Name        string
	Alias       string
	Description string
	Attributes  Attributes
	// TemplateRoleIDs are granted to users assigned here when the department
	// was made from a department template.
	TemplateRoleIDs []string
	CreatedAt       time.Time
	// Depth is 1 for a root department. An int32 beside the handle, so
	// that a department stays in the allocator's 160-byte class: templates
	// make them by the thousand.
	Depth int32

	h uint32 // the department's handle in its realm (handles.go); 0 once removed
}

// Held maps the ids at the other end of one user's (or one department's)
// assignments to the time each was made, in Unix seconds: the precision of
// the wire's assignedAt, for any year a time.Time holds (see
// Realm.Assignment). Realm.AssignmentsByUser and Realm.AssignmentsByDept
// return them; the realm itself keeps handles (handles.go).
type Held map[string]int64

// Assignment places a user in a department (whose OrgID is the
// assignment's organization). The realm stores it in its two indexes and
// builds this value when it is read.
type Assignment struct {
	UserID       string
	DepartmentID string
	AssignedAt   time.Time
}

// Application is a client registered in the realm's application catalog.
type Application struct {
	ID          string
	ClientID    string
	Name        string
	Description string
	Tags        []string
	Status      string // ACTIVE or DISABLED
	Assignable  bool
	CreatedAt   time.Time
}

// PropertyTemplate declares typed attributes of an organization's departments.
type PropertyTemplate struct {
	ID          string
	OrgID       string
	Name        string
	Description string
	Properties  []Property
	CreatedAt   time.Time
}

// Property is one typed attribute of a property template.
type Property struct {
	Key           string
	Label         string
	Type          string // STRING NUMBER BOOLEAN DATE ENUM EMAIL URL
	Required      bool
	AllowedValues []string
}

// DepartmentTemplate is an immutable department subtree to instantiate.
type DepartmentTemplate struct {
	ID          string
	OrgID       string
	Name        string
	Description string
	Root        TemplateNode
	CreatedAt   time.Time
}

// TemplateNode is one department of a department template.
type TemplateNode struct {
	Name       string
	Alias      string
	Attributes Attributes
	RoleIDs    []string
	Children   []TemplateNode
}

// AuditEntry records one mutating call.
type AuditEntry struct {
	ID           string
	Timestamp    time.Time
	ActorID      string
	Action       string
	TenantID     string
	ResourceType string
	ResourceID   string
	Outcome      string
}

// Config is the platform configuration (GET, PUT and PATCH /admin/config).
type Config struct {
	TokenLifetimeSeconds int
	MaxPageSize          int
	DPoPNonceRequired    bool
	DecisionLatencyMs    int
	DecisionFailureRate  float64
}

// MaxTokenLifetimeSeconds bounds Config.TokenLifetimeSeconds: no token the
// configuration names a lifetime for lives longer, whatever the
// configuration was when it was minted, so a refusal that must outlast a
// token it cannot read lasts this long past the token's latest issue.
const MaxTokenLifetimeSeconds = 86400

// DefaultConfig is the configuration a new store starts with.
func DefaultConfig() Config {
	return Config{TokenLifetimeSeconds: 300, MaxPageSize: 100}
}
