package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// idSeq derives a realm's ids from a seed and what each object is.
type idSeq struct {
	mac   []byte // HMAC key
	realm string
	// seen counts the objects named alike so far, so that two of one
	// kind and name (which the store's own checks refuse for most kinds)
	// still get ids of their own.
	seen map[string]uint64
}

// SeedIDs makes the ids r assigns from now on derive from seed, the realm's
// name and each object's own identity: its kind and its name in the realm
// (a user's username, a service account's client, a client's client id, a
// role's or a group's name, an organization's alias, a department's alias,
// or its parent and name), never its place among the others. Replicas with
// one key seed so give a party the same id whatever else their fixtures
// say, and never give its id to another one: a token (or a session) naming
// an object by id names that object, or nothing, at every replica
// (a-edge16b F1: an id from the object's place alone handed a removed
// user's id, and her tokens, to the next user with his GRANTs; an id from
// the place and the realm's whole description still did so across replicas
// whose code built the realm's objects in another order, and refused every
// token of the realm at a replica whose fixture differed in anything). A
// nil seed goes back to random ids (NewID). Call it only while the realm is
// not installed: the ids it assigns once it serves requests must be random,
// or replicas would give the same id to different things.
func (r *Realm) SeedIDs(seed []byte) {
	if seed == nil {
		r.ids = nil
		return
	}
	r.ids = &idSeq{mac: append([]byte(nil), seed...), realm: r.Name, seen: map[string]uint64{}}
}

// newID returns the id of a new object of kind named name in r: derived
// from them (SeedIDs) or random.
func (r *Realm) newID(kind, name string) string {
	q := r.ids
	if q == nil {
		return NewID()
	}
	key := string(named(named(nil, kind), name))
	n := q.seen[key]
	q.seen[key] = n + 1
	h := hmac.New(sha256.New, q.mac)
	h.Write(named([]byte("orgauthz mockserver id v2\x00"), q.realm))
	h.Write([]byte(key))
	h.Write(binary.BigEndian.AppendUint64(nil, n))
	var b [16]byte
	copy(b[:], h.Sum(nil))
	return formatID(b)
}

// named appends s to b after its length (a varint): texts so written one
// after another read back one way only.
func named(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// deptName is what names a department among a realm's: its alias in its
// organization, unique there, when it has one; else its parent ("" for a
// top one) and its name (a-fix17b: names repeat among siblings, and two
// "Sales" of other aliases took their ids by the order they were listed
// in). Two siblings of one name and no alias are told apart by that order
// only: nothing else the fixture says of them differs.
func deptName(orgID, parentID, name, alias string) string {
	if alias != "" {
		return string(named(named([]byte(orgID), "alias"), alias))
	}
	return string(named(named(named([]byte(orgID), "name"), parentID), name))
}
