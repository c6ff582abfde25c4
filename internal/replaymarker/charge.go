package replaymarker

import (
	"strconv"
	"time"
)

// Answers of [ChargeScript] and (first element) [ChargeCountScript].
const (
	// ChargeFirst: the record was not there; the script wrote it (or,
	// ChargeCountScript, charged it for the caller to write).
	ChargeFirst = 1
	// ChargeTaken: the record was there (a replay); nothing was written.
	ChargeTaken = 0
	// ChargeOverLimit: the proof is dated no later than a record its owner
	// had to drop to stay within its limit, so it cannot be told from the
	// replay of that record; nothing was written.
	ChargeOverLimit = -1
)

// ChargeScript is the Lua script (EVAL ChargeScript 3 record ownerSet
// ownerMark untilMillis iatSeconds limit lifeMillis; the keys from
// [ChargeKeys]) that records a DPoP proof charged to the key that signed
// it, in one atomic step, with the bound the in-memory replay cache keeps
// on one key: an owner holds at most limit records, its oldest (by iat)
// dropped to make room for a new one, and a proof dated no later than the
// newest record it dropped is refused ([ChargeOverLimit]: it cannot be
// told from that record's replay), so that a fresh proof always passes
// and only a flood's stragglers of its own second are refused.
//
// A record there answers [ChargeTaken] (a replay stays a replay). A proof
// dated at or before ownerMark answers [ChargeOverLimit]. Otherwise the
// script forgets the owner's records whose life (lifeMillis from their
// iat, by Redis's clock, TIME) is over, drops the oldest while the owner
// holds limit (deleting each one's record and raising ownerMark to its
// iat, kept until every record it dropped would have expired: the
// record's own expiry, which the Verifier that wrote it chose, or on a
// Cluster, where the script cannot read it, the caller's lifeMillis from
// its iat), writes the record (SET
// record 1 NX PXAT until), adds it to ownerSet (a sorted set by iat that
// lives as long as its latest record) and answers [ChargeFirst]. An owner
// costs its records, their names in ownerSet, and a mark. The script
// touches keys it was not given (the records it drops), which a single
// server allows; on a Cluster the record and the owner's keys lie in
// different slots, so it runs on a single server only.
const ChargeScript = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('EXISTS', KEYS[1]) == 1 then
  return ` + chargeTaken + `
end
local record, dropped = KEYS[1], nil
` + chargeOwner + `
if not redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', ARGV[1]) then
  return ` + chargeTaken + `
end
return ` + chargeFirst + `
`

// ChargeCountScript is the Lua script (EVAL ChargeCountScript 2 ownerSet
// ownerMark untilMillis iatSeconds limit lifeMillis record) that charges a
// record the caller has just written (SET NX: a replay never reaches it)
// to its owner where the record and the owner's keys cannot be in one
// script (a Cluster: they lie in different slots): the owner's part of
// [ChargeScript] (the mark's refusal, the owner's records kept within
// limit, the record added to ownerSet). It answers an array:
// [ChargeOverLimit] (the caller deletes the record it wrote), or
// [ChargeFirst], the owner's mark ("0" when it has none), and the names of
// the records it dropped, which the caller deletes only once the mark
// lasts as long as each would have ([ExtendMarkScript]).
const ChargeCountScript = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local record = ARGV[5]
local dropped = {` + chargeFirst + `, '0'}
` + chargeOwner + `
if m then
  dropped[2] = string.format('%.0f', m)
end
return dropped
`

// ExtendMarkScript is the Lua script (EVAL ExtendMarkScript 1 ownerMark
// millis markSeconds) that keeps an owner's mark at least markSeconds
// and at least millis more, by Redis's clock, and never lowers nor
// shortens it: on a Cluster, where [ChargeCountScript] cannot read the
// expiry of the records it drops (they lie in other slots), the caller
// reads it and keeps the mark until each would have expired. A mark gone
// meanwhile (the charge's own expiry passed while the caller was slow) is
// written again (a-rep14b F2): the step is right whenever it runs.
const ExtendMarkScript = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local want = now + tonumber(ARGV[1])
local m = tonumber(ARGV[2])
local cur = tonumber(redis.call('GET', KEYS[1]) or '')
local pt = redis.call('PTTL', KEYS[1])
if cur and cur >= m and (pt == -1 or (pt > 0 and now + pt >= want)) then
  return 0
end
if cur and cur > m then
  m = cur
end
if pt == -1 then
  redis.call('SET', KEYS[1], string.format('%.0f', m), 'KEEPTTL')
  return 1
end
if pt > 0 and now + pt > want then
  want = now + pt
end
redis.call('SET', KEYS[1], string.format('%.0f', m), 'PXAT', string.format('%.0f', want))
return 1
`

// chargeOwner is the owner's part of both scripts. KEYS[2] and KEYS[3]
// (ChargeScript) or KEYS[1] and KEYS[2] (ChargeCountScript) are the
// owner's set and mark: it names them set and mark; the script before it
// names the record (record) and, when the caller deletes the records it
// drops, the list that collects them (dropped, nil otherwise).
const chargeOwner = `local set, mark = KEYS[#KEYS - 1], KEYS[#KEYS]
local untilMs, iat, limit, life = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local m = tonumber(redis.call('GET', mark) or '')
if m and iat <= m then
  if dropped then
    return {` + chargeOverLimit + `}
  end
  return ` + chargeOverLimit + `
end
redis.call('ZREMRANGEBYSCORE', set, '-inf', '(' .. string.format('%.0f', math.floor((now - life) / 1000)))
local keep = 0
while redis.call('ZCARD', set) >= limit do
  local p = redis.call('ZPOPMIN', set)
  local s = tonumber(p[2])
  local ends = s * 1000 + life + 1000
  if dropped then
    dropped[#dropped + 1] = p[1]
  else
    local pt = redis.call('PTTL', p[1])
    if pt > 0 and now + pt > ends then
      ends = now + pt
    end
    redis.call('DEL', p[1])
  end
  if ends > keep then
    keep = ends
  end
  if not m or s > m then
    m = s
  end
end
if keep > 0 then
  local pt = redis.call('PTTL', mark)
  if pt > 0 and now + pt > keep then
    keep = now + pt
  end
  redis.call('SET', mark, string.format('%.0f', m), 'PXAT', string.format('%.0f', keep))
end
redis.call('ZADD', set, iat, record)
local ttl = redis.call('PTTL', set)
if ttl < 0 or now + ttl < untilMs then
  redis.call('PEXPIREAT', set, string.format('%.0f', untilMs))
end`

// The answers as the scripts' text.
const (
	chargeFirst     = "1"
	chargeTaken     = "0"
	chargeOverLimit = "-1"
)

// ChargeArgs are the scripts' arguments after their keys: the record's
// until (Unix milliseconds, rounded up), the proof's iat (Unix seconds),
// the owner's limit (at least 1) and the record's life from its iat in
// milliseconds.
func ChargeArgs(iat, until time.Time, limit int) [4]string {
	u := CeilMilli(until)
	return [4]string{strconv.FormatInt(u, 10), strconv.FormatInt(iat.Unix(), 10), strconv.Itoa(max(limit, 1)),
		strconv.FormatInt(max(u-iat.Unix()*1000, 1), 10)}
}

// ChargeKeys are the names of an owner's sorted set of records and mark
// under prefix: "n{" owner "}:s" and ":m"; the braces make them share a
// Cluster slot.
func ChargeKeys(prefix, owner string) (set, mark string) {
	base := prefix + "n{" + owner + "}:"
	return base + "s", base + "m"
}
