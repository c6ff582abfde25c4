package pep

import (
	"errors"
	"fmt"
	"sync"

	"github.com/orgauthz/orgauthz/internal/strictjson"
)

// The gateway's answers are read strictly by a strictjson.Reader (see that
// package for the rules); pep's reader adds the scratch space and the
// budget its answers need.

// reader reads one JSON answer.
type reader struct {
	*strictjson.Reader
	// scratch space for unescaping a permission's resource and scope, which
	// must both stay valid until the permission is read, and a status
	resScratch, scopeScratch, statusScratch []byte
	// budget is how many more items (tenants, departments) the answer
	// may make the client keep; see spend.
	budget int
}

// spend counts one more item kept against the budget.
func (r *reader) spend() error {
	if r.budget--; r.budget < 0 {
		return errTooManyTenants
	}
	return nil
}

// readers keeps readers between answers, with their name sets and stacks.
var readers = sync.Pool{New: func() any { return &reader{Reader: strictjson.New()} }}

// newReader returns a reader of body; release it with free when done.
func newReader(body []byte) *reader {
	r := readers.Get().(*reader)
	r.Reset(body)
	r.budget = 0
	return r
}

// free returns r to the pool; it must not be used again.
func (r *reader) free() {
	r.Release()
	readers.Put(r)
}

// pep's own reading errors, with fixed texts.
var (
	errUnknownStatus  = errors.New("a status is not GRANT, DENY or ERROR")
	errTooManyPairs   = fmt.Errorf("the answer lists more than %d pairs", maxListed)
	errTooManyTenants = fmt.Errorf("the answer lists more than %d tenants and departments", maxOrganizationItems)
)

// jsonProblem describes why an answer could not be read, in words that hold
// nothing of the answer itself.
func jsonProblem(err error) string {
	return strictjson.Problem(err, errUnknownStatus, errTooManyPairs, errTooManyTenants)
}
