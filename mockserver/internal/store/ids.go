package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// idSeq derives a realm's ids from a seed and what the realm is built
// from, in the order they are asked for.
type idSeq struct {
	mac   []byte // HMAC key
	realm string
	from  [sha256.Size]byte // what the realm is built from, hashed
	n     uint64
}

// SeedIDs makes the ids r assigns from now on derive from seed, the
// realm's name, from (what the realm is built from: the fixture's
// description of it) and their order: two realms seeded alike and built
// from the same description by the same calls in the same order get the
// same ids, as replicas loading one fixture with one key seed must, and
// two built from different descriptions share none, so that a token (or a
// session) naming an object by id is never served by a replica where the
// id names another one (a-edge16b F1: with the id derived from the
// object's place alone, removing a user from a replica's fixture handed
// her id, and her tokens, to the next user, with his GRANTs). A nil seed
// goes back to random ids (NewID). Call it only while the realm is not
// installed: the ids it assigns once it serves requests must be random, or
// replicas would give the same id to different things.
func (r *Realm) SeedIDs(seed, from []byte) {
	if seed == nil {
		r.ids = nil
		return
	}
	r.ids = &idSeq{mac: append([]byte(nil), seed...), realm: r.Name, from: sha256.Sum256(from)}
}

// newID returns the next id of r: derived (SeedIDs) or random.
func (r *Realm) newID() string {
	q := r.ids
	if q == nil {
		return NewID()
	}
	h := hmac.New(sha256.New, q.mac)
	h.Write([]byte("orgauthz mockserver id\x00" + q.realm + "\x00"))
	h.Write(q.from[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], q.n)
	q.n++
	h.Write(n[:])
	var b [16]byte
	copy(b[:], h.Sum(nil))
	return formatID(b)
}
