package redisstore

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// panickyHook is a user's go-redis hook with a bug: every command panics.
type panickyHook struct{}

func (panickyHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (panickyHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(context.Context, redis.Cmder) error { panic("a bug in the user's Redis hook") }
}

func (panickyHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { panic("a bug in the user's Redis hook") }
}

// The stores run the user's Redis client, hooks included, on goroutines of
// their own, so that a client that ignores its context cannot hold the
// caller: a panic there fails the command (the proof is refused, the purge
// is not published) rather than end the process, as it used to.
func TestRedisClientPanicFailsTheCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	s := NewReplayStore(c, "t:")
	settled(t, c, s.prefix)
	inv := NewInvalidator(c, "purges")
	c.AddHook(panickyHook{})

	first, err := s.Remember(t.Context(), "k", time.Now().Add(time.Minute))
	require.ErrorIs(t, err, errPanicked)
	require.False(t, first)
	require.ErrorIs(t, inv.Publish(t.Context(), []byte("purge")), errPanicked)
}
