package replaymarker

import (
	"strconv"
	"time"
)

// Answers of [ChargeScript].
const (
	// ChargeFirst: the record was not there; the script wrote it and
	// charged it to its owner.
	ChargeFirst = 1
	// ChargeTaken: the record was there (a replay); nothing was written.
	ChargeTaken = 0
	// ChargeOverLimit: the owner holds its limit of records taken within
	// the window; nothing was written.
	ChargeOverLimit = -1
)

// ChargeBuckets is how many buckets of width window/ChargeBuckets (rounded
// down) [ChargeScript] sums: the current one and the ChargeBuckets - 1
// before it, which together cover at most the window, and at least
// (ChargeBuckets - 1) / ChargeBuckets of it.
const ChargeBuckets = 4

// ChargeScript is the Lua script (EVAL ChargeScript 2 record counterBase
// untilMillis limit widthMillis) that records a DPoP proof charged to the
// key that signed it, in one atomic step: it sums the owner's counters of
// the current time bucket and the ChargeBuckets - 1 before it (by Redis's
// clock, TIME: one clock for every replica), counterBase .. bucket, and
// answers [ChargeOverLimit], writing nothing, when the sum is limit or
// more and the record is not there ([ChargeTaken] when it is: a replay
// stays a replay). Otherwise it writes the record (SET record 1 NX PXAT
// until): [ChargeTaken] when it was there, else it adds one to the current
// bucket's counter, which expires once no later call sums it, and answers
// [ChargeFirst].
//
// With width the proofs' window (maxAge + maxSkew) / ChargeBuckets, an
// owner is refused only when it had limit records taken within at most
// the window, so never while it sends fewer than limit proofs in any
// window (the in-memory cache's bound: proofs held of one key); and it
// holds at most limit records taken within any 3/4 of the window, so at
// most 3 * limit records in all (a record lives at most the window plus
// dpop.ReplayStoreMargin, 130 s with the defaults, under three spans of
// 52.5 s). The counters cost an owner ChargeBuckets keys at most, each a
// few dozen bytes, whatever it sends. counterBase names the counters' keys
// ([ChargeKey]). The script touches keys it was not given (the counters
// of the current time), which a single server allows; on a Cluster the
// record and the counters lie in different slots, so it runs on a single
// server only.
const ChargeScript = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, width = tonumber(ARGV[2]), tonumber(ARGV[3])
local b = math.floor(now / width)
local sum = 0
for i = 0, ` + chargeBuckets + ` - 1 do
  local c = redis.call('GET', KEYS[2] .. string.format('%.0f', b - i))
  if c then
    sum = sum + (tonumber(c) or 0)
  end
end
if sum >= limit then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return ` + chargeTaken + `
  end
  return ` + chargeOverLimit + `
end
if not redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', ARGV[1]) then
  return ` + chargeTaken + `
end
local k = KEYS[2] .. string.format('%.0f', b)
redis.call('INCR', k)
redis.call('PEXPIREAT', k, string.format('%.0f', (b + ` + chargeBuckets + `) * width))
return ` + chargeFirst + `
`

// ChargeCountScript is the Lua script (EVAL ChargeCountScript 1
// counterBase limit widthMillis) that charges a record about to be written
// to its owner where the record and the counters cannot be in one script
// (a Cluster: they lie in different slots): it sums the owner's counters
// as [ChargeScript] does and answers [ChargeOverLimit] when the sum is
// limit or more, writing nothing; otherwise it adds one to the current
// bucket's counter and answers [ChargeFirst]. The caller writes the
// record after it, so the count is atomic (two calls never both pass the
// last place) but charges every record tried, a replay's too (only a
// holder of the token the proof is bound to can replay it). Its keys
// share counterBase's hash tag ([ChargeKey]), so one slot.
const ChargeCountScript = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, width = tonumber(ARGV[1]), tonumber(ARGV[2])
local b = math.floor(now / width)
local sum = 0
for i = 0, ` + chargeBuckets + ` - 1 do
  local c = redis.call('GET', KEYS[1] .. string.format('%.0f', b - i))
  if c then
    sum = sum + (tonumber(c) or 0)
  end
end
if sum >= limit then
  return ` + chargeOverLimit + `
end
local k = KEYS[1] .. string.format('%.0f', b)
redis.call('INCR', k)
redis.call('PEXPIREAT', k, string.format('%.0f', (b + ` + chargeBuckets + `) * width))
return ` + chargeFirst + `
`

// The answers and ChargeBuckets as the script's text.
const (
	chargeBuckets   = "4"
	chargeFirst     = "1"
	chargeTaken     = "0"
	chargeOverLimit = "-1"
)

// ChargeArgs are [ChargeScript]'s arguments after its keys: the record's
// until (Unix milliseconds, rounded up), the owner's limit and the
// buckets' width for window, the proofs' window (maxAge + maxSkew).
func ChargeArgs(until time.Time, limit int, window time.Duration) [3]string {
	width := window.Milliseconds() / ChargeBuckets
	return [3]string{strconv.FormatInt(CeilMilli(until), 10), strconv.Itoa(max(limit, 1)), strconv.FormatInt(max(width, 1), 10)}
}

// ChargeKey is the key of an owner's counters under prefix: "n{" owner
// "}:"; the braces make them share a Cluster slot.
func ChargeKey(prefix, owner string) string {
	return prefix + "n{" + owner + "}:"
}
