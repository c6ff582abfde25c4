package store

import (
	"crypto"
)

// Tenant statuses.
const (
	TenantActive         = "ACTIVE"
	TenantDecommissioned = "DECOMMISSIONED"
)

// ProvisionTenant creates realm name for a new tenant, signed by key (kid),
// with the default roles and client and an admin user (username adminEmail,
// the given password) holding realm-admin. A realm of that name, live or
// decommissioned, is a conflict.
func (st *State) ProvisionTenant(name, plan, adminEmail, password string, key crypto.Signer, kid string) (*Realm, error) {
	if _, ok := st.Realms[name]; ok {
		return nil, Conflict("tenant %q already exists", name)
	}
	now := st.Now().UTC()
	r := NewRealm(name, now)
	r.SigningKey, r.KeyID = key, kid
	r.Tenant = &Tenant{ID: NewID(), Plan: plan, AdminEmail: adminEmail, CreatedAt: now}
	r.EnsureDefaults()
	if _, err := r.AddUser(User{Username: adminEmail, Email: adminEmail, Password: password, CreatedAt: now},
		[]string{r.RoleByName[RoleRealmAdmin]}, nil); err != nil {
		return nil, err
	}
	st.Realms[name] = r
	return r, nil
}

// TenantRealm returns the realm of a live tenant by tenant id.
func (st *State) TenantRealm(tenantID string) (*Realm, error) {
	for _, r := range st.Realms {
		if r.Tenant != nil && r.Tenant.ID == tenantID && !r.Decommissioned {
			return r, nil
		}
	}
	return nil, NotFound("tenant %q", tenantID)
}

// DecommissionTenant marks a live tenant's realm decommissioned: from then on
// every token of the realm is refused. A tenant already decommissioned is
// not found.
func (st *State) DecommissionTenant(tenantID string) (*Realm, error) {
	r, err := st.TenantRealm(tenantID)
	if err != nil {
		return nil, err
	}
	r.Decommissioned = true
	r.Tenant.DecommissionedAt = st.Now().UTC()
	return r, nil
}

// TenantID returns the tenant id of a realm for audit entries: the tenant's
// id for a provisioned realm, the realm name otherwise.
func (r *Realm) TenantID() string {
	if r.Tenant != nil {
		return r.Tenant.ID
	}
	return r.Name
}
