package mockserver

// Helpers shared by the handlers of the organization API: running a
// handler's work on the path's realm under that realm's lock, answering it,
// and the wire forms every resource uses. The handlers themselves live with
// their resource (organizations.go, departments.go, ...).

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/orgauthz/orgauthz/mockserver/internal/store"
)

// readRealm runs fn on the path's realm under that realm's read lock, with
// the configured page size limit (the configuration's maxPageSize, from 1
// to 100: PUT /admin/config refuses anything else).
func (s *Server) readRealm(r *http.Request, fn func(rm *store.Realm, maxPage int) error) error {
	maxPage := s.store.Config().MaxPageSize
	return s.store.Read(r.PathValue("realm"), func(rm *store.Realm) error { return fn(rm, maxPage) })
}

// writeRealm runs fn on the path's realm under that realm's write lock,
// with the store's current time. fn must check everything before its first
// change. A realm whose writes took more than their share while other
// realms are served waits for its turn first (store.Store.WriteContext); a
// client that goes away meanwhile gets a 503 and nothing is written.
func (s *Server) writeRealm(r *http.Request, fn func(rm *store.Realm, now time.Time) error) error {
	err := s.store.WriteContext(r.Context(), r.PathValue("realm"), func(rm *store.Realm) error { return fn(rm, s.store.Now()) })
	if ctxErr := r.Context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return errf(http.StatusServiceUnavailable, "the request ended while it waited for its realm's turn to write; nothing was written")
	}
	return err
}

// getOne answers 200 {"result": conv(v)} with the v find returns under the
// read lock (conv runs under it too), or find's error. It is a function,
// not a method, because it is generic.
func getOne[T, U any](s *Server, w http.ResponseWriter, r *http.Request,
	find func(rm *store.Realm) (T, error), conv func(T) U) {
	s.readList(w, r, func(rm *store.Realm, _ int) (any, error) {
		v, err := find(rm)
		if err != nil {
			return nil, err
		}
		return resultBody{Result: conv(v)}, nil
	})
}

// readList answers 200 with the body fn builds under the read lock, or
// fn's error: the page of a list (fn parses what it needs from the request
// and returns the whole, sorted and converted, body for the page), or
// getOne's result.
func (s *Server) readList(w http.ResponseWriter, r *http.Request, fn func(rm *store.Realm, maxPage int) (any, error)) {
	var out any
	err := s.readRealm(r, func(rm *store.Realm, maxPage int) error {
		v, err := fn(rm, maxPage)
		out = v
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// defaultPageSize is the page size of a list whose request sets no count,
// unless the resource has its own (rolePageSize).
const defaultPageSize = 20

// listPage answers the page of the list find returns under the read lock,
// converting only the items on the page with conv. find's error (a 404 for
// the path) comes before a bad offset or count; def is the default page
// size. It is a function, not a method, because it is generic.
func listPage[T, U any](s *Server, w http.ResponseWriter, r *http.Request, def int,
	find func(rm *store.Realm) ([]T, error), conv func(T) U) {
	listWindow(s, w, r, def, func(rm *store.Realm) (int, func(lo, hi int) []T, error) {
		all, err := find(rm)
		if err != nil {
			return 0, nil, err
		}
		return len(all), func(lo, hi int) []T { return all[lo:hi] }, nil
	}, conv)
}

// listSorted is listPage for a list the store keeps sorted as a
// store.SortedList, of which only the page is read: a page costs itself
// (and a logarithm), however long the list.
func listSorted[T comparable, U any](s *Server, w http.ResponseWriter, r *http.Request, def int,
	find func(rm *store.Realm) (*store.SortedList[T], error), conv func(T) U) {
	listWindow(s, w, r, def, func(rm *store.Realm) (int, func(lo, hi int) []T, error) {
		all, err := find(rm)
		if err != nil {
			return 0, nil, err
		}
		return all.Len(), all.Window, nil
	}, conv)
}

// listWindow answers the page the request asks of a list that find
// describes by its length and a window of its items; a missing list (an
// error of find) comes before a bad offset or count.
func listWindow[T, U any](s *Server, w http.ResponseWriter, r *http.Request, def int,
	find func(rm *store.Realm) (int, func(lo, hi int) []T, error), conv func(T) U) {
	s.readList(w, r, func(rm *store.Realm, maxPage int) (any, error) {
		total, window, err := find(rm)
		if err != nil {
			return nil, err
		}
		p, err := parsePage(r, def, maxPage)
		if err != nil {
			return nil, err
		}
		return windowBody(p, total, window, conv), nil
	})
}

// pageBody builds the paginated body of the window p of all, converting only
// the items on the page.
func pageBody[T, U any](p page, all []T, conv func(T) U) listBody[U] {
	return windowBody(p, len(all), func(lo, hi int) []T { return all[lo:hi] }, conv)
}

// windowBody builds the paginated body of the window p of a list of total
// items, of which window returns those at positions [lo, hi), converting
// only the items on the page.
func windowBody[T, U any](p page, total int, window func(lo, hi int) []T, conv func(T) U) listBody[U] {
	var body listBody[U]
	body.MetaData.CurrentPagination = p
	body.MetaData.TotalRows = total
	start := min(p.Offset, total)
	end := min(start+p.Count, total)
	body.Results = make([]U, 0, end-start)
	if start < end {
		for _, v := range window(start, end) {
			body.Results = append(body.Results, conv(v))
		}
	}
	return body
}

// writeOne answers 200 {"result": v} with the v fn builds under the write
// lock, or the error.
func (s *Server) writeOne(w http.ResponseWriter, r *http.Request, fn func(rm *store.Realm, now time.Time) (any, error)) {
	var out any
	err := s.writeRealm(r, func(rm *store.Realm, now time.Time) error {
		v, err := fn(rm, now)
		out = v
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeResult(w, http.StatusOK, out)
}

// createOne answers 201 {"result": v} with the resource fn creates under
// the write lock, or the error. fn returns the new resource's id and its
// wire form v; the Location names id under collection (an escaped path,
// usually the request's) at the public URL (publicURL), where a GET
// answers the new resource, and the id becomes the audit entry's resource.
func (s *Server) createOne(w http.ResponseWriter, r *http.Request, c *caller, collection string,
	fn func(rm *store.Realm, now time.Time) (id string, v any, err error)) {
	var (
		id  string
		out any
	)
	err := s.writeRealm(r, func(rm *store.Realm, now time.Time) error {
		var err error
		id, out, err = fn(rm, now)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c.resourceID = id
	w.Header().Set("Location", s.publicURL(r, strings.TrimSuffix(collection, "/")+"/"+id))
	writeResult(w, http.StatusCreated, out)
}

// deleteOne answers 200 {"result": {"id": id, "deleted": true}} once del
// succeeds under the write lock, or del's error. id, taken from the path,
// is the audit entry's resource either way.
func (s *Server) deleteOne(w http.ResponseWriter, r *http.Request, c *caller, id string, del func(rm *store.Realm) error) {
	c.resourceID = id
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		return deletedJSON{ID: id, Deleted: true}, del(rm)
	})
}

// bodyAfter decodes r's body into in and returns check, which a handler
// calls first under the realm's lock with the error of finding the path's
// resource (see found): a missing resource (404) comes before any error of
// the body.
func bodyAfter(r *http.Request, in any) (check func(found error) error) {
	derr := decodeBody(r, in)
	return func(found error) error {
		if found != nil {
			return found
		}
		return derr
	}
}

// found keeps the error of a lookup and drops its value, for bodyAfter's
// check: check(found(rm.Organization(orgID))).
func found[T any](_ T, err error) error { return err }

// wire returns the function that converts what a store call returns with
// conv, or passes on its error, for writeOne: return
// wire(toOrgJSON)(rm.UpdateOrganization(...)).
func wire[T, U any](conv func(T) U) func(T, error) (any, error) {
	return func(v T, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return conv(v), nil
	}
}

// identified is a wire form that holds its resource's id.
type identified interface{ id() string }

// created is wire for createOne: it also returns the new resource's id,
// which its wire form holds.
func created[T any, U identified](conv func(T) U) func(T, error) (string, any, error) {
	return func(v T, err error) (string, any, error) {
		if err != nil {
			return "", nil, err
		}
		out := conv(v)
		return out.id(), out, nil
	}
}

// idBody is a request body naming one resource by id, such as
// {"roleId": "..."}.
type idBody interface {
	// ref returns the body's field and the id it holds.
	ref() (field, id string)
}

// linkToOrg decodes an idBody B and answers 200 {"result": v} with the v
// link returns for the path's organization and the body's id, under the
// write lock. An unknown organization is a 404 before any error of the
// body; an empty id is a 400 naming the field. It is a function, not a
// method, because it is generic.
func linkToOrg[B idBody](s *Server, w http.ResponseWriter, r *http.Request,
	link func(rm *store.Realm, orgID, id string) (any, error)) {
	orgID := r.PathValue("orgId")
	var in B
	check := bodyAfter(r, &in)
	s.writeOne(w, r, func(rm *store.Realm, _ time.Time) (any, error) {
		if err := check(found(rm.Organization(orgID))); err != nil {
			return nil, err
		}
		field, id := in.ref()
		if id == "" {
			return nil, badField(field, "is required")
		}
		return link(rm, orgID, id)
	})
}

// fail writes err as the error body of r, a request to a realm
// administration endpoint, whose caller protect authenticated for the
// path's realm: its message may repeat the ids that realm holds
// (pathRealmKnows). A store field error becomes a 400 naming the field.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe *store.FieldError
	if errors.As(err, &fe) {
		err = badField(fe.Field, "%s", said(fe.Message))
	}
	s.writeErrKnowing(w, err, s.pathRealmKnows(r))
}

// deletedJSON is the result of every DELETE.
type deletedJSON struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// attrsJSON copies attributes for the wire: never null, and no null lists.
func attrsJSON(a store.Attributes) map[string][]string {
	out := make(map[string][]string, len(a))
	for k, v := range a {
		out[k] = append([]string{}, v...)
	}
	return out
}

// boolParam reads an optional true/false query parameter.
func boolParam(r *http.Request, name string) (bool, error) {
	v, ok := queryParam(r.URL.Query(), name)
	if !ok {
		return false, nil
	}
	switch v {
	case "true", "false":
		return v == "true", nil
	default:
		return false, badField(name, "must be true or false")
	}
}

// timeJSON formats a timestamp as RFC 3339 UTC.
func timeJSON(t time.Time) string { return t.UTC().Format(time.RFC3339) }
