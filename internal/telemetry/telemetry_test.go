package telemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return false }

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    error
		want   string
	}{
		{200, nil, ""},
		{503, errors.New("unavailable"), "503"},
		{404, nil, "404"},
		{0, fmt.Errorf("dial: %w", context.DeadlineExceeded), "timeout"},
		{0, fmt.Errorf("read: %w", timeoutErr{}), "timeout"},
		{0, context.Canceled, "canceled"},
		{0, errors.New("connection refused"), "_OTHER"},
	} {
		assert.Equal(t, tc.want, errorType(tc.status, tc.err), "%d %v", tc.status, tc.err)
	}
}
