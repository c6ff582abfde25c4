package store

import "slices"

// orgIndex is what the store keeps per organization so that an operation on
// one organization touches that organization's data only, never every
// department of the realm: the children of each parent in list order, the
// department aliases, and the organization's templates.
type orgIndex struct {
	// children maps a parent id to its child departments sorted by name then
	// id (byName); the organization's own id keys its root departments. A
	// parent without children has no entry.
	children map[string][]*Department
	// aliases maps a department alias to the department's id.
	aliases map[string]string
	// depts counts the organization's departments.
	depts int
	// propTmpls and deptTmpls hold the ids of the organization's property and
	// department templates.
	propTmpls Set
	deptTmpls Set
}

func newOrgIndex() *orgIndex {
	return &orgIndex{children: map[string][]*Department{}, aliases: map[string]string{}, propTmpls: Set{}, deptTmpls: Set{}}
}

// orgIndex returns the index of an organization known to exist.
func (r *Realm) orgIndex(orgID string) *orgIndex { return r.orgs[orgID] }

func cmpDept(a, b *Department) int { return byName(a.Name, a.ID, b.Name, b.ID) }

func cmpOrg(a, b *Organization) int { return byName(a.Name, a.ID, b.Name, b.ID) }

// insertSorted inserts v into the sorted list, which stays sorted by cmp.
func insertSorted[T any](list []T, v T, cmp func(a, b T) int) []T {
	i, _ := slices.BinarySearchFunc(list, v, cmp)
	return slices.Insert(list, i, v)
}

// removeSorted removes v, found by binary search with cmp, from the sorted
// list; v must be in it under its current sort key.
func removeSorted[T comparable](list []T, v T, cmp func(a, b T) int) []T {
	i, ok := slices.BinarySearchFunc(list, v, cmp)
	if !ok || list[i] != v {
		return list
	}
	return slices.Delete(list, i, i+1)
}

// link adds a new department to its organization's index.
func (ix *orgIndex) link(d *Department) {
	ix.children[d.ParentID] = insertSorted(ix.children[d.ParentID], d, cmpDept)
	if d.Alias != "" {
		ix.aliases[d.Alias] = d.ID
	}
	ix.depts++
}

// unlink removes a department from its organization's index; its children
// must be unlinked by the caller.
func (ix *orgIndex) unlink(d *Department) {
	siblings := removeSorted(ix.children[d.ParentID], d, cmpDept)
	if len(siblings) == 0 {
		delete(ix.children, d.ParentID)
	} else {
		ix.children[d.ParentID] = siblings
	}
	delete(ix.children, d.ID)
	if d.Alias != "" && ix.aliases[d.Alias] == d.ID {
		delete(ix.aliases, d.Alias)
	}
	ix.depts--
}

// rename changes a department's name, keeping its siblings sorted.
func (ix *orgIndex) rename(d *Department, name string) {
	siblings := removeSorted(ix.children[d.ParentID], d, cmpDept)
	d.Name = name
	ix.children[d.ParentID] = insertSorted(siblings, d, cmpDept)
}
