package store

// A realm's assignments are most of a large realm's heap, and the garbage
// collector marks that heap on every cycle while other realms' decisions
// run (issue 12). So the assignment indexes hold no pointer: each user and
// each department has a small integer handle, unique in its realm, and the
// indexes map handles to handles. A map whose keys and values hold no
// pointer keeps its entries in memory the collector does not scan.
//
// User handles are never reused (users are never removed). Department
// handles are: templates make and delete departments by the thousand, so a
// deleted department's handle goes to a free list and the next department
// made takes it. Before it does, forget has removed every assignment of the
// deleted department from both indexes and cleared its handle, so that a
// recycled handle starts with no assignment (checked by CheckInvariants).
// Handle 0 is never given out: a department or user whose handle is 0 is
// not (or no longer) in its realm.

// handleSet maps the handles at the other end of one user's (or one
// department's) assignments to the time each was made, in Unix seconds.
type handleSet map[uint32]int64

// handles is the realm's handle tables and its two assignment indexes,
// indexed by handle.
type handles struct {
	users  []*User       // user handle -> user; users[0] is nil
	depts  []*Department // department handle -> department; nil when free
	free   []uint32      // free department handles, taken last in first out
	byUser []handleSet   // user handle -> department handles; nil when none
	byDept []handleSet   // department handle -> user handles; nil when none
}

// addUserHandle gives u the next user handle.
func (r *Realm) addUserHandle(u *User) {
	h := &r.h
	if len(h.users) == 0 {
		h.users, h.byUser = []*User{nil}, []handleSet{nil}
	}
	u.h = uint32(len(h.users))
	h.users = append(h.users, u)
	h.byUser = append(h.byUser, nil)
}

// addDept puts a new department in Depts with a handle, a free one if
// there is one.
func (r *Realm) addDept(d *Department) {
	h := &r.h
	if len(h.depts) == 0 {
		h.depts, h.byDept = []*Department{nil}, []handleSet{nil}
	}
	if n := len(h.free); n > 0 {
		d.h = h.free[n-1]
		h.free = h.free[:n-1]
		h.depts[d.h] = d
		h.byDept[d.h] = nil // forget left it so; a recycled handle holds nothing
	} else {
		d.h = uint32(len(h.depts))
		h.depts = append(h.depts, d)
		h.byDept = append(h.byDept, nil)
	}
	r.Depts[d.ID] = d
}

// removeDept removes a department without assignments from Depts and frees
// its handle.
func (r *Realm) removeDept(d *Department) {
	h := &r.h
	if d.h != 0 && int(d.h) < len(h.depts) && h.depts[d.h] == d {
		h.depts[d.h] = nil
		h.byDept[d.h] = nil
		h.free = append(h.free, d.h)
	}
	d.h = 0
	delete(r.Depts, d.ID)
}

// heldOf returns the department handles of user u's assignments.
func (r *Realm) heldOf(u *User) handleSet {
	if int(u.h) >= len(r.h.byUser) {
		return nil
	}
	return r.h.byUser[u.h]
}

// holdersOf returns the user handles of department d's assignments.
func (r *Realm) holdersOf(d *Department) handleSet {
	if int(d.h) >= len(r.h.byDept) {
		return nil
	}
	return r.h.byDept[d.h]
}

// setAdd records v at at in sets[k], allocating the set when needed.
func setAdd(sets []handleSet, k, v uint32, at int64) {
	s := sets[k]
	if s == nil {
		s = handleSet{}
		sets[k] = s
	}
	s[v] = at
}

// setRemove removes v from sets[k] and drops the set once empty.
func setRemove(sets []handleSet, k, v uint32) {
	if s := sets[k]; s != nil {
		delete(s, v)
		if len(s) == 0 {
			sets[k] = nil
		}
	}
}

// AssignmentsByUser returns a copy of the realm's assignments by user id:
// department id -> time assigned, for each user with at least one. For
// tests and diagnostics; it costs every assignment of the realm.
func (r *Realm) AssignmentsByUser() map[string]Held {
	out := map[string]Held{}
	for uh, s := range r.h.byUser {
		if len(s) == 0 {
			continue
		}
		held := make(Held, len(s))
		for dh, at := range s {
			if d := r.h.depts[dh]; d != nil {
				held[d.ID] = at
			}
		}
		out[r.h.users[uh].ID] = held
	}
	return out
}

// AssignmentsByDept returns a copy of the realm's assignments by
// department id: user id -> time assigned, for each department with at
// least one. For tests and diagnostics; it costs every assignment of the
// realm.
func (r *Realm) AssignmentsByDept() map[string]Held {
	out := map[string]Held{}
	for dh, s := range r.h.byDept {
		if len(s) == 0 || r.h.depts[dh] == nil {
			continue
		}
		held := make(Held, len(s))
		for uh, at := range s {
			held[r.h.users[uh].ID] = at
		}
		out[r.h.depts[dh].ID] = held
	}
	return out
}
