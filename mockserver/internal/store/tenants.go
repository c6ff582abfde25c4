package store

import (
	"crypto"
	"errors"
	"time"
)

// Tenant statuses.
const (
	TenantActive         = "ACTIVE"
	TenantDecommissioned = "DECOMMISSIONED"
)

// Decommissioned reports whether the realm's tenant was decommissioned: its
// tokens are refused from then on. It is safe to call without the realm's
// lock.
func (r *Realm) Decommissioned() bool { return r.gone.Load() }

// ProvisionTenant creates realm name for a new tenant, signed by key (kid),
// with the default roles and client and an admin user (username adminEmail,
// the given password) holding realm-admin. A realm of that name, live or
// decommissioned, is a conflict. The realm is built before the store's lock
// is taken, which is then held only to add it to the map.
func (s *Store) ProvisionTenant(name, plan, adminEmail, password string, key crypto.Signer, kid string) (*Realm, error) {
	if _, taken := s.Lookup(name); taken {
		return nil, Conflict("tenant %q already exists", name)
	}
	now := s.now().UTC()
	r := NewRealm(name, now)
	r.SigningKey, r.KeyID = key, kid
	r.Tenant = &Tenant{ID: NewID(), Plan: plan, AdminEmail: adminEmail, CreatedAt: now}
	r.EnsureDefaults()
	if _, err := r.AddUser(User{Username: adminEmail, Email: adminEmail, Password: password, CreatedAt: now},
		[]string{r.RoleByName[RoleRealmAdmin]}, nil); err != nil {
		return nil, err
	}
	if err := s.Install(r); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, Conflict("tenant %q already exists", name)
		}
		return nil, err
	}
	return r, nil
}

// TenantInfo is the platform-administration view of a tenant.
type TenantInfo struct {
	Tenant
	Name   string // the realm's name
	Status string // TenantActive or TenantDecommissioned
}

// LiveTenant returns the tenant with the given id while it is live; a
// decommissioned or unknown tenant is ErrNotFound.
func (s *Store) LiveTenant(tenantID string) (TenantInfo, error) {
	s.mu.RLock()
	r, ok := s.tenants[tenantID]
	s.mu.RUnlock()
	if !ok || r.Decommissioned() {
		return TenantInfo{}, NotFound("tenant %q", tenantID)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return TenantInfo{Tenant: *r.Tenant, Name: r.Name, Status: TenantActive}, nil
}

// DecommissionTenant marks a live tenant's realm decommissioned: from then on
// every token of the realm is refused. A tenant already decommissioned, or
// unknown, is ErrNotFound. It returns the realm's name and the time of
// decommissioning.
func (s *Store) DecommissionTenant(tenantID string) (realm string, at time.Time, err error) {
	s.mu.RLock()
	r, ok := s.tenants[tenantID]
	s.mu.RUnlock()
	if !ok || !r.gone.CompareAndSwap(false, true) {
		return "", time.Time{}, NotFound("tenant %q", tenantID)
	}
	now := s.now().UTC()
	r.mu.Lock()
	r.gen++
	r.Tenant.DecommissionedAt = now
	r.mu.Unlock()
	return r.Name, now, nil
}

// Incarnation returns the id of the provisioned tenant the realm is, which
// no other realm, in this process or another, ever has (a random id per
// provisioning), or "" for a realm that is no provisioned tenant (the
// fixture's, master). It never changes, so it is safe to call without the
// realm's lock.
func (r *Realm) Incarnation() string {
	if r.Tenant != nil {
		return r.Tenant.ID
	}
	return ""
}

// TenantID returns the tenant id of a realm for audit entries: the tenant's
// id for a provisioned realm, the realm name otherwise. It never changes, so
// it is safe to call without the realm's lock.
func (r *Realm) TenantID() string {
	if r.Tenant != nil {
		return r.Tenant.ID
	}
	return r.Name
}
