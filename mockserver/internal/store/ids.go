package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// idSeq derives a realm's ids from a seed, in the order they are asked
// for.
type idSeq struct {
	mac   []byte // HMAC key
	realm string
	n     uint64
}

// SeedIDs makes the ids r assigns from now on derive from seed, the
// realm's name and their order: two realms seeded alike and built by the
// same calls in the same order get the same ids, as replicas loading one
// fixture with one key seed must. A nil seed goes back to random ids
// (NewID). Call it only while the realm is not installed: the ids it
// assigns once it serves requests must be random, or replicas would give
// the same id to different things.
func (r *Realm) SeedIDs(seed []byte) {
	if seed == nil {
		r.ids = nil
		return
	}
	r.ids = &idSeq{mac: append([]byte(nil), seed...), realm: r.Name}
}

// newID returns the next id of r: derived (SeedIDs) or random.
func (r *Realm) newID() string {
	q := r.ids
	if q == nil {
		return NewID()
	}
	h := hmac.New(sha256.New, q.mac)
	h.Write([]byte("orgauthz mockserver id\x00" + q.realm + "\x00"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], q.n)
	q.n++
	h.Write(n[:])
	var b [16]byte
	copy(b[:], h.Sum(nil))
	return formatID(b)
}
