package store

import "slices"

// orgIndex is what the store keeps per organization so that an operation on
// one organization touches that organization's data only, never every
// department of the realm: the children of each parent in list order, the
// department aliases, and the organization's templates.
type orgIndex struct {
	// children maps a parent id to its child departments sorted by name then
	// id (byName); the organization's own id keys its root departments. A
	// parent without children has no entry. A SortedList rather than a
	// sorted slice, so that adding, renaming or removing one of many
	// siblings, or loading them out of order, costs O(log n) each.
	children map[string]*SortedList[*Department]
	// aliases maps a department alias to the department's id.
	aliases map[string]string
	// depts counts the organization's departments.
	depts int
	// propTmpls and deptTmpls hold the ids of the organization's property and
	// department templates.
	propTmpls Set
	deptTmpls Set
	// props maps each property key declared by the organization's property
	// templates (keys are unique across them) to its template and property,
	// and required holds the keys of the required ones: a department's
	// attributes are checked in the time of the attributes, and a template's
	// keys in the time of the template, however many templates the
	// organization has.
	props    map[string]propRef
	required Set
}

// propRef is a property of a property template.
type propRef struct {
	tmpl *PropertyTemplate
	prop *Property // in tmpl.Properties
}

func newOrgIndex() *orgIndex {
	return &orgIndex{children: map[string]*SortedList[*Department]{}, aliases: map[string]string{},
		propTmpls: Set{}, deptTmpls: Set{}, props: map[string]propRef{}, required: Set{}}
}

// addProps indexes the properties of t, whose keys must be free.
func (ix *orgIndex) addProps(t *PropertyTemplate) {
	for i := range t.Properties {
		p := &t.Properties[i]
		ix.props[p.Key] = propRef{tmpl: t, prop: p}
		if p.Required {
			ix.required[p.Key] = struct{}{}
		}
	}
}

// removeProps removes the properties of t from the index.
func (ix *orgIndex) removeProps(t *PropertyTemplate) {
	for _, p := range t.Properties {
		if ix.props[p.Key].tmpl == t {
			delete(ix.props, p.Key)
			delete(ix.required, p.Key)
		}
	}
}

// orgIndex returns the index of an organization known to exist.
func (r *Realm) orgIndex(orgID string) *orgIndex { return r.orgs[orgID] }

// cmpDept orders sibling departments. It is a variable so that tests can
// count the comparisons an operation makes (it is only ever called through
// a function value anyway).
var cmpDept = func(a, b *Department) int { return byName(a.Name, a.ID, b.Name, b.ID) }

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
	siblings := ix.children[d.ParentID]
	if siblings == nil {
		siblings = &SortedList[*Department]{}
		ix.children[d.ParentID] = siblings
	}
	siblings.insert(d, cmpDept)
	if d.Alias != "" {
		ix.aliases[d.Alias] = d.ID
	}
	ix.depts++
}

// unlink removes a department from its organization's index; its children
// must be unlinked by the caller.
func (ix *orgIndex) unlink(d *Department) {
	if siblings := ix.children[d.ParentID]; siblings != nil {
		siblings.remove(d, cmpDept)
		if siblings.Len() == 0 {
			delete(ix.children, d.ParentID)
		}
	}
	ix.drop(d)
}

// drop removes a department whose parent's child list is being dropped
// whole (its parent is going too) from its organization's index, without
// searching that list.
func (ix *orgIndex) drop(d *Department) {
	delete(ix.children, d.ID)
	if d.Alias != "" && ix.aliases[d.Alias] == d.ID {
		delete(ix.aliases, d.Alias)
	}
	ix.depts--
}

// rename changes a department's name, keeping its siblings sorted.
func (ix *orgIndex) rename(d *Department, name string) {
	siblings := ix.children[d.ParentID]
	siblings.remove(d, cmpDept)
	d.Name = name
	siblings.insert(d, cmpDept)
}
