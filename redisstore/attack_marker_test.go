package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/dpop"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

// TestAttackMarkerFromAFastClockLocksOutForever: the "since" marker is
// written (SET NX, no expiry) with the clock of whichever replica first
// finds it missing. One replica whose wall clock is a day ahead at that
// moment (a bad NTP step, a VM restored with the wrong time) writes a
// marker a day in the future; every replica, including those with a
// correct clock, then refuses every proof with ErrReplayStoreUnavailable
// for that day plus 70 s. Nothing ever corrects the marker: fixing the
// bad replica's clock changes nothing, and the marker never expires.
// The doc promises "proofs are refused for maxSkew + ReplayStoreMargin
// (70 s ...); then the service is whole again, without restarting
// anything".
func TestAttackMarkerFromAFastClockLocksOutForever(t *testing.T) {
	srv := redistest.Start(t)
	fast := NewReplayStore(srv.Client(), "")
	fast.now = func() time.Time { return time.Now().Add(24 * time.Hour) }
	good := NewReplayStore(srv.Client(), "")

	signer, err := dpop.GenerateKey()
	require.NoError(t, err)
	vFast := replica(t, fast, time.Now) // the Verifier's own clock is fine; only the store's marker clock is off
	_, err = vFast.Verify(t.Context(), proofAt(t, signer, time.Now()))
	mk, _ := srv.Client().Get(t.Context(), fast.since).Result()
	keys, _ := srv.Client().Keys(t.Context(), "*").Result()
	t.Logf("marker %s now %d fastnow %d addr %s real %v keys %v", mk, time.Now().UnixMilli(), fast.now().UnixMilli(), srv.Addr(), srv.Real(), keys)
	require.ErrorIs(t, err, dpop.ErrReplayStoreUnavailable, "the keyspace is new: refused, marker written")

	// Even 10 minutes later (clock moved by hand), a correct replica
	// refuses every fresh proof.
	later := time.Now().Add(10 * time.Minute)
	vLater := replica(t, good, func() time.Time { return later })
	_, err = vLater.Verify(t.Context(), proofAt(t, signer, later))
	require.False(t, errors.Is(err, dpop.ErrReplayStoreUnavailable),
		"BREAK: 10 minutes after the keyspace began, a fresh proof is still refused as unavailable (%v): the marker is a day ahead", err)
}
