// Package store holds the reference server's state in memory: realms and their
// users, roles, groups and clients, and the organization hierarchy built on
// them. It knows nothing of HTTP.
//
// All state sits behind one lock. Readers use Read, writers use Write; a Write
// function validates everything first and mutates only once nothing can fail,
// so every change, a cascade delete or a template instantiation included, is
// applied whole or not at all. Values handed out of the store are copies; the
// pointers inside State are only valid inside the Read or Write call.
package store

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
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
	mu sync.RWMutex
	st State
}

// State is everything the store holds. It is reachable only inside Read and
// Write.
type State struct {
	// Now is the store's clock.
	Now func() time.Time
	// Realms by name.
	Realms map[string]*Realm
	// Audit holds the audit log, oldest first.
	Audit []AuditEntry
	// Config is the platform configuration.
	Config Config
}

// New returns an empty store using now as its clock (time.Now when nil).
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{st: State{Now: now, Realms: map[string]*Realm{}, Config: DefaultConfig()}}
}

// Read runs fn with shared access to the state. fn must not mutate it.
func (s *Store) Read(fn func(st *State) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(&s.st)
}

// Write runs fn with exclusive access to the state. fn must check every
// precondition before its first mutation: a Write that returns an error must
// have changed nothing.
func (s *Store) Write(fn func(st *State) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(&s.st)
}

// Realm returns the named realm, or ErrNotFound. A decommissioned realm is
// still returned; callers that need a live realm check Decommissioned.
func (st *State) Realm(name string) (*Realm, error) {
	r, ok := st.Realms[name]
	if !ok {
		return nil, NotFound("realm %q", name)
	}
	return r, nil
}

// NewID returns a random RFC 4122 version 4 UUID.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
