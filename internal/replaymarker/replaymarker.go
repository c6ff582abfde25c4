// Package replaymarker holds what the two Redis replay stores
// (redisstore.ReplayStore and the reference server's redisreplay.Store)
// share about the keyspace's marker: the script that decides it.
package replaymarker

// Answers of [Script]: the second element of its reply.
const (
	// Vouched: the keyspace holds every record since the marker's time,
	// for the caller's clock.
	Vouched = "0"
	// Began: the script began the keyspace now (the marker was missing,
	// unreadable, in the future, of another run of the server, or below
	// Redis's clock's high-water by more than the margin).
	Began = "1"
	// ClockAhead: Redis's clock, now or at its high-water, is ahead of
	// the caller's reading by more than the margin: records the caller
	// still counts as live may have expired early. The marker stands
	// (only this caller cannot be vouched for).
	ClockAhead = "2"
	// CallerAhead: the caller's reading is ahead of Redis's clock by more
	// than the margin: the stamps the caller puts on what it issues (a
	// token's iat, the start of a proof's window) may postdate a loss of
	// Redis's keys they preceded, and would read as vouched for after it.
	// The marker stands (only this caller cannot be vouched for).
	CallerAhead = "3"
)

// HighWaterStep is how far (in milliseconds) TIME must pass the marker's
// high-water before the script writes it again: at most one write of the
// marker a second, not one a call. The high-water stands for every TIME
// up to HighWaterStep - 1 ms past it.
const HighWaterStep = 1000

// Script is the Lua script (EVAL Script 1 marker marginMillis
// callerMillis) that decides the keyspace's marker on the server, in one
// atomic step, with the server's own clock and identity: it reads TIME
// (in Unix milliseconds, rounded up), the server's run_id (INFO server: a
// new one on every start of the server, so on every restart, with or
// without persistence, and every restore from a snapshot or an AOF) and
// the marker, "<ms>@<run_id>@<hw>": when the keyspace began, the run of
// the server that began it, and the high-water of TIME seen by the
// script since (the latest TIME it wrote). callerMillis is the caller's
// own clock reading (Unix milliseconds) when it sent the call.
//
// The marker stands when it was written by this run of the server, its
// time is not later than TIME + marginMillis, and its high-water is not
// later than TIME + marginMillis either. A marker of another run (the
// server restarted: it may have lost the writes after its last snapshot
// or fsync), missing, unreadable (not a string, or a time not a decimal
// integer of at most 16 characters), later than TIME + marginMillis, or
// whose high-water is (Redis's clock stepped back after running ahead:
// it expired, by the later clock, records whose until the callers still
// count as live) is replaced by "<TIME>@<run_id>@<TIME>": the keyspace
// begins now, and the script answers {TIME, [Began]}. A bare time "<ms>"
// (written by hand: an operator vouching for the keyspace as it is, or an
// older version) is taken for this run, and a "<ms>@<run_id>" of an
// older version has no high-water: the script binds or upgrades them,
// writing "<ms>@<run_id>@<TIME>", without moving the time. A marker that
// stands gets its high-water raised to TIME when TIME passed it by
// [HighWaterStep] or more (one write a second at most).
//
// Redis expires records by its own clock (PXAT is absolute), so a record
// the caller still counts as live (its until later than the caller's
// clock plus the margin) is there only while Redis's clock never passed
// the caller's by more than the margin. So a marker that stands answers
// {ms, [ClockAhead]}, writing nothing but the high-water, when TIME or
// the high-water (plus HighWaterStep - 1: the TIMEs it stands for) is
// later than callerMillis + marginMillis: Redis's clock ran ahead (a bad
// time source, a resumed machine's clock corrected), or the caller's is
// behind, or the call was held (its process frozen) after its reading;
// whichever it is, that caller cannot be vouched for, and no other
// caller is refused for it. It answers {ms, [CallerAhead]}, likewise,
// when callerMillis is later than TIME + marginMillis: the caller's clock
// ran ahead, and what it stamps could read as issued after a loss of keys
// that came after it. Otherwise it answers {ms, [Vouched]}: the
// array is of two bulk strings, the marker's time (the text stored, or
// TIME) and the answer. It answers an error reply, writing nothing, when
// INFO server holds no run_id (a server or proxy that hides it could not
// tell the store it lost writes) or callerMillis is not a decimal
// integer.
//
// Because it is decided where it is stored, a marker write that reaches
// the server late (its sender paused, its bytes held in a partitioned
// connection) judges the marker as it is then: it can never replace a
// newer marker (one written after Redis lost its keys) with an older
// time, as a SET of a TIME read in an earlier round trip would, nor lower
// its high-water. It uses one key, so it runs on a Cluster as well, on
// the marker's shard, whose run_id and clock it reads (Redis 5 or later:
// TIME and INFO before a write need script effects replication, the
// default since Redis 5).
const Script = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor((tonumber(t[2]) + 999) / 1000)
local margin = tonumber(ARGV[1])
if not string.match(ARGV[2] or '', '^[+-]?%d+$') or string.len(ARGV[2]) > 16 then
  return redis.error_reply('ERR the caller\'s clock reading is not a time in Unix milliseconds')
end
local caller = tonumber(ARGV[2])
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
if not run then
  return redis.error_reply('ERR INFO server answered no run_id: the replay keyspace cannot know its server lost writes')
end
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' then
  local ms, r, hw = string.match(v, '^([+-]?%d+)@(%x+)@([+-]?%d+)$')
  if not ms then
    ms, r = string.match(v, '^([+-]?%d+)@(%x+)$')
  end
  if not ms then
    ms = string.match(v, '^[+-]?%d+$')
  end
  if ms and string.len(ms) <= 16 and tonumber(ms) <= now + margin and (r == nil or r == run)
      and (hw == nil or (string.len(hw) <= 16 and tonumber(hw) <= now + margin)) then
    local reach = now
    if hw == nil or now >= tonumber(hw) + ` + highWaterStep + ` then
      redis.call('SET', KEYS[1], ms .. '@' .. run .. '@' .. string.format('%.0f', now))
    else
      reach = math.max(now, tonumber(hw) + ` + highWaterStep + ` - 1)
    end
    if reach > caller + margin then
      return {ms, '` + ClockAhead + `'}
    end
    if caller > now + margin then
      return {ms, '` + CallerAhead + `'}
    end
    return {ms, '` + Vouched + `'}
  end
end
local s = string.format('%.0f', now)
redis.call('SET', KEYS[1], s .. '@' .. run .. '@' .. s)
return {s, '` + Began + `'}
`

// highWaterStep is HighWaterStep as the script's text.
const highWaterStep = "1000"
