// Package store holds the reference server's state in memory: realms and their
// users, roles, groups and clients, and the organization hierarchy built on
// them. It knows nothing of HTTP.
//
// Realms are isolated: each has its own lock, so that no work in one realm (a
// slow read, a burst of writes, a template instantiation) waits for another,
// and while other realms serve callers a realm's writes are paced to their
// share of the machine (fair.go), so that they do not take its processors.
// The store's own lock guards only the map of realms and is held for a map
// lookup, never while a realm is read or written. The platform configuration
// is an atomic value, and each part of each tenant's audit log (audit.go) has
// a lock of its own, held for an append or for copying its list of chunks.
//
// Readers of a realm use Read, writers use Write; a Write function validates
// everything first and mutates only once nothing can fail, so every change, a
// cascade delete or a template instantiation included, is applied whole or
// not at all. Values handed out of the store are copies; the pointers inside a
// Realm are only valid inside the Read or Write call.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Errors the store returns. Callers map them to HTTP statuses; the wrapped
// message names what was not found or what clashed.
var (
	// ErrNotFound reports a missing realm, entity or link.
	ErrNotFound = errors.New("not found")
	// ErrConflict reports a uniqueness clash (an alias, a name, a link).
	ErrConflict = errors.New("conflict")
	// ErrInvalid reports input that breaks a rule the store enforces
	// (depth, template properties, a disabled application).
	ErrInvalid = errors.New("invalid")
)

// NotFound returns an error wrapping ErrNotFound with a readable message.
func NotFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

// find returns m[key], or an error wrapping ErrNotFound whose message is
// format with args.
func find[V any](m map[string]V, key, format string, args ...any) (V, error) {
	v, ok := m[key]
	if !ok {
		return v, NotFound(format, args...)
	}
	return v, nil
}

// inOrg returns m[id] when organization orgID exists and m[id] is of it;
// otherwise ErrNotFound, what naming the kind of m's values.
func inOrg[T interface{ orgOf() string }](r *Realm, orgID string, m map[string]T, id, what string) (T, error) {
	var none T
	if _, err := r.Organization(orgID); err != nil {
		return none, err
	}
	if v, ok := m[id]; ok && v.orgOf() == orgID {
		return v, nil
	}
	return none, NotFound("%s %q in organization %q", what, id, orgID)
}

func (d *Department) orgOf() string         { return d.OrgID }
func (t *PropertyTemplate) orgOf() string   { return t.OrgID }
func (t *DepartmentTemplate) orgOf() string { return t.OrgID }

// Conflict returns an error wrapping ErrConflict with a readable message.
func Conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConflict, fmt.Sprintf(format, args...))
}

// Invalid returns an error wrapping ErrInvalid with a readable message.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Store is the in-memory state of the reference server. It is safe for
// concurrent use.
type Store struct {
	now func() time.Time

	// mu guards the two maps below, not the realms they hold.
	mu      sync.RWMutex
	realms  map[string]*Realm // by name
	tenants map[string]*Realm // by tenant id, provisioned realms only
	// byName is realms again, for Lookup: a sync.Map reads without a
	// lock, where mu's read lock was a write to memory every core shares,
	// on every request. Install adds to both under mu.
	byName sync.Map // name -> *Realm

	config atomic.Pointer[Config]
	audit  auditLogs
	pacer  *pacer // paces a realm's writes while other realms are served (fair.go)
}

// New returns an empty store using now as its clock (time.Now when nil).
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{now: now, realms: map[string]*Realm{}, tenants: map[string]*Realm{}, pacer: newPacer()}
	cfg := DefaultConfig()
	s.config.Store(&cfg)
	return s
}

// Now returns the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Lookup returns the named realm, live or decommissioned, without taking its
// lock: only the fields that never change once the realm is installed (Name,
// CreatedAt, SigningKey, KeyID, TenantID) and Decommissioned may be read from
// it outside Read and Write.
func (s *Store) Lookup(name string) (*Realm, bool) {
	r, ok := s.byName.Load(name)
	if !ok {
		return nil, false
	}
	return r.(*Realm), true
}

// lookup is Lookup with ErrNotFound.
func (s *Store) lookup(name string) (*Realm, error) {
	r, ok := s.Lookup(name)
	if !ok {
		return nil, NotFound("realm %q", name)
	}
	return r, nil
}

// Serving records that r is serving an authenticated request now. While a
// realm is, other realms' writes are paced to their share of the machine
// (fair.go); callers note only requests whose credentials were checked, so
// that no anonymous request can slow a realm's writes.
func (s *Store) Serving(r *Realm) { s.pacer.note(r) }

// LastServing returns the names of the (at most two) realms that Serving
// noted last, the latest first: whether a realm's writes are paced depends
// on them. It is for diagnostics and tests.
func (s *Store) LastServing() []string {
	var out []string
	for _, r := range [2]*Realm{s.pacer.last.Load(), s.pacer.prev.Load()} {
		if r != nil {
			out = append(out, r.Name)
		}
	}
	return out
}

// Read runs fn on the named realm under that realm's read lock; fn must not
// mutate it. A missing realm is ErrNotFound; a decommissioned realm is still
// handed to fn, which checks Decommissioned when it needs a live one.
func (s *Store) Read(realm string, fn func(r *Realm) error) error {
	r, err := s.lookup(realm)
	if err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return fn(r)
}

// ReadRealm is Read of r, a realm Lookup returned, for a caller that has
// it already: a name never names another realm once installed, so it
// spares the lookup, not a check.
func (s *Store) ReadRealm(r *Realm, fn func(r *Realm) error) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return fn(r)
}

// Write runs fn on the named realm under that realm's write lock. fn must
// check every precondition before its first mutation: a Write that returns an
// error must have changed nothing. A missing realm is ErrNotFound. It is
// WriteContext without a context to end its wait.
func (s *Store) Write(realm string, fn func(r *Realm) error) error {
	return s.WriteContext(context.Background(), realm, fn)
}

// WriteContext is Write whose wait for its turn ends with ctx. While other
// realms are being served, a realm whose writes have held its lock for more
// than their share waits before it takes the lock (fair.go); if ctx ends
// first, WriteContext returns ctx's error and fn does not run.
func (s *Store) WriteContext(ctx context.Context, realm string, fn func(r *Realm) error) error {
	r, err := s.lookup(realm)
	if err != nil {
		return err
	}
	if err := r.pace.take(ctx); err != nil {
		return err
	}
	defer r.pace.give()
	if err := s.pacer.wait(ctx, r); err != nil {
		return err
	}
	r.mu.Lock()
	r.gen++ // before fn: a write that fails or panics half-way counts too
	began := s.pacer.clock()
	defer func() {
		s.pacer.charge(r, s.pacer.clock()-began)
		r.mu.Unlock()
	}()
	return fn(r)
}

// Generation returns a number that every write of the realm changes (each
// Write, whether fn fails or not, and decommissioning): what was computed
// from the realm under one generation still holds while Generation returns
// it. Call it inside Read or Write only; it is the realm's, not the store's,
// and a realm of the same name made again starts a count of its own.
func (r *Realm) Generation() uint64 { return r.gen }

// Install adds fully built realms to the store, all or none: a name already
// in use, a name given twice, or a realm without a signing key is an error
// and installs nothing. The realms must not be used by the caller afterwards
// except through the store.
func (s *Store) Install(realms ...*Realm) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(realms))
	for _, r := range realms {
		if r.SigningKey == nil || r.KeyID == "" {
			return Invalid("realm %q has no signing key", r.Name)
		}
		if _, taken := s.realms[r.Name]; taken || seen[r.Name] {
			return Conflict("realm %q already exists", r.Name)
		}
		if r.Tenant != nil {
			if _, taken := s.tenants[r.Tenant.ID]; taken {
				return Conflict("tenant %q already exists", r.Tenant.ID)
			}
		}
		seen[r.Name] = true
	}
	for _, r := range realms {
		s.realms[r.Name] = r
		s.byName.Store(r.Name, r)
		if r.Tenant != nil {
			s.tenants[r.Tenant.ID] = r
		}
	}
	return nil
}

// Realms returns the names of every realm, live or decommissioned, in no
// particular order.
func (s *Store) Realms() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.realms))
	for name := range s.realms {
		out = append(out, name)
	}
	return out
}

// Config returns the platform configuration.
func (s *Store) Config() Config { return *s.config.Load() }

// SetConfig replaces the platform configuration.
func (s *Store) SetConfig(c Config) { s.config.Store(&c) }

// UpdateConfig replaces the platform configuration with what fn returns for
// the current one, atomically with respect to other updates; an error from
// fn changes nothing.
func (s *Store) UpdateConfig(fn func(Config) (Config, error)) (Config, error) {
	for {
		old := s.config.Load()
		c, err := fn(*old)
		if err != nil {
			return *old, err
		}
		if s.config.CompareAndSwap(old, &c) {
			return c, nil
		}
	}
}

// NewID returns a random RFC 4122 version 4 UUID. It allocates only the
// string: every department, assignment and audit entry gets one.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return formatID(b)
}

// formatID formats 16 bytes as a version 4 UUID, setting its version and
// variant bits.
func formatID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}
