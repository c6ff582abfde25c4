package mockserver

import (
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestCorrectedClockLocksNoRealmOut: a token issued and revoked while the
// clock ran a day ahead, then forgotten by a later revocation in the same
// wrong day, carries that day in its exp; when the clock is corrected it
// stays refused (the realm recalls it by jti), and every other token of
// the realm is still taken: the one issued before the wrong reading and a
// fresh one issued after the correction. (Found by an attack: the
// forgotten token's exp became the realm's watermark at once, and the
// correction refused every token expiring within the day.)
func TestCorrectedClockLocksNoRealmOut(t *testing.T) {
	h := newAuthHarness(t)
	real := h.now.Load()
	live := h.token(t, "acme", "alice", TokenLifetime(time.Hour))
	resp, _ := h.do(t, "GET", "/probe/acme/any", "Bearer "+live)
	if resp.StatusCode != 200 {
		t.Fatalf("setup: live token refused: %d", resp.StatusCode)
	}
	// The clock jumps one day ahead (a wrong reading, later corrected by NTP).
	h.now.Add(int64(24 * time.Hour))
	x := h.token(t, "acme", "alice", TokenLifetime(5*time.Minute))
	if c := h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {x}}); c != 200 {
		t.Fatalf("revoke x: %d", c)
	}
	h.now.Add(int64(6 * time.Minute)) // still wrong; x has expired by it
	y := h.token(t, "acme", "alice", TokenLifetime(5*time.Minute))
	if c := h.revoke(t, url.Values{"client_id": {"admin-cli"}, "token": {y}}); c != 200 {
		t.Fatalf("revoke y: %d", c)
	}
	// NTP corrects the clock: back to real time (+7 minutes elapsed).
	h.now.Store(real + int64(7*time.Minute))
	resp, _ = h.do(t, "GET", "/probe/acme/any", "Bearer "+x)
	if resp.StatusCode != 401 {
		t.Errorf("the token revoked during the wrong reading is taken after the correction: %d", resp.StatusCode)
	}
	resp, _ = h.do(t, "GET", "/probe/acme/any", "Bearer "+live)
	if resp.StatusCode != 200 {
		t.Errorf("a token issued before the wrong reading, never revoked, is refused after the correction: %d", resp.StatusCode)
	}
	fresh := h.token(t, "acme", "alice", TokenLifetime(12*time.Hour))
	resp, _ = h.do(t, "GET", "/probe/acme/any", "Bearer "+fresh)
	if resp.StatusCode != 200 {
		t.Errorf("a fresh 12-hour token issued after the correction is refused: %d (realm locked out until about a day later)", resp.StatusCode)
	}
}

// TestRevocationRecallFallsBackToTheWatermark: a realm recalls its last
// recall forgotten revocations by jti; the oldest pushed out of the recall
// is still refused, by the watermark (its exp), after the clock steps
// back, and so is any token expiring no later; a token expiring after it
// and never revoked is taken, and another realm is not touched.
func TestRevocationRecallFallsBackToTheWatermark(t *testing.T) {
	t.Parallel()
	v := newRevokedTokens()
	t0 := time.Unix(1_800_000_000, 0)
	exp := func(i int) time.Time { return t0.Add(time.Duration(i+1) * time.Second) }
	for i := range recall + 1 {
		v.revoke("r", "jti-"+strconv.Itoa(i), exp(i), t0)
	}
	// The clock passes every exp; one more revocation forgets them all.
	late := exp(recall + 10)
	v.revoke("r", "last", late.Add(time.Hour), late)
	// The clock steps back to t0: every forgotten token is refused.
	for _, i := range []int{0, 1, recall / 2, recall} {
		if !v.revoked("r", "jti-"+strconv.Itoa(i), exp(i)) {
			t.Errorf("revoked token %d taken after the clock stepped back", i)
		}
	}
	if !v.revoked("r", "never-revoked", exp(0)) {
		t.Error("a token expiring no later than the revocation pushed out of the recall is taken")
	}
	if v.revoked("r", "never-revoked", exp(1)) {
		t.Error("a token expiring after the watermark, never revoked, is refused")
	}
	if v.revoked("other", "jti-0", exp(0)) {
		t.Error("another realm's token is refused by this realm's recall")
	}
}
