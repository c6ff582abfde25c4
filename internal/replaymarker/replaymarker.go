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
// callerMillis generation wrote) that decides the keyspace's marker on the server, in one
// atomic step, with the server's own clock and identity: it reads TIME
// (in Unix milliseconds, rounded up), the server's run_id (INFO server: a
// new one on every start of the server, so on every restart, with or
// without persistence, and every restore from a snapshot or an AOF) and
// the marker, "<ms>@<run_id>@<hw>@<gen>": when the keyspace began, the run of
// the server that began it, the high-water of TIME seen by the
// script since (the latest TIME it wrote), and its generation (below). callerMillis is the caller's
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
// count as live) is replaced by "<TIME>@<run_id>@<TIME>@<gen>": the keyspace
// begins now, and the script answers {TIME, [Began]}. A bare time "<ms>"
// (written by hand: an operator vouching for the keyspace as it is, or an
// older version) is taken for this run, and a "<ms>@<run_id>" or
// "<ms>@<run_id>@<hw>" of an older version has no high-water or no
// generation: the script binds or upgrades them, writing
// "<ms>@<run_id>@<TIME>@<gen>", without moving the time. A marker that
// stands gets its high-water raised to TIME when TIME passed it by
// [HighWaterStep] or more (one write a second at most). When that is the
// only write due (a read: no record written before, the marker bound and
// of the caller's generation or higher), a refused write (a Redis full to
// its maxmemory answers OOM to every write) does not fail the call: the
// answer is decided as if it were written (this call's TIME is checked
// all the same), and only the high-water stays behind, so a step of
// Redis's clock ahead and back until a later write lands is not seen (as
// one between two calls is not). A read's answer thus never depends on
// room for one write, and one caller filling Redis cannot refuse every
// read (a-rep13 F2). A write that binds or upgrades the marker, or raises
// its generation after a record, still fails the call when refused.
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
// A server that may evict keys cannot vouch for its keyspace: a record
// evicted (every record has an expiry, so volatile-* policies take them
// too) is a forgotten proof or revocation while the marker stands, and
// under allkeys-* the marker itself can go. So the script reads INFO
// memory and answers an error reply ([MayEvict], naming the fix), writing
// nothing, unless maxmemory is 0 or maxmemory_policy is noeviction; and
// one that hides either field fails likewise. Every call checks it, so a
// policy changed on a running server refuses the next call. A policy
// changed to an evicting one and back between two calls is seen by INFO
// stats' evicted_keys: the script takes a server that evicted keys in this
// run for another run of it (the run it compares the marker's with is
// "<run_id>e<evicted_keys>" once evicted_keys is not 0), so the keyspace
// begins again, as after a restart, at every rise. (CONFIG GET cannot be
// called from a script; INFO can.)
//
// Eviction is one way a running server loses keys with its run_id
// unchanged; the others are commands, and the script binds the marker to
// their calls as well (INFO commandstats): SWAPDB (which brings back
// another database, its older marker of the same run with it), MOVE
// (which takes a key to another database), DEBUG (DEBUG RELOAD reloads
// the last snapshot) and CONFIG RESETSTAT (which zeroes evicted_keys and
// every count here, and so would hide the others). The run the marker is
// compared with carries each of these counts that is not 0 ("a<swapdb>",
// "b<move>", "c<debug>", "d<resetstat>" after "e<evicted_keys>", so it
// stays a hex word): a call of any of them, on any database of the
// server, begins the keyspace again at the next call of the store, as a
// restart does (70 s of refused proofs with the Verifier's defaults). Not
// seen: a second RESETSTAT that finds the counts as the first left them,
// after an evicting policy set and reset with no call of the store
// between (a server whose stats are reset routinely should keep
// maxmemory 0 or noeviction for good, or deny CONFIG to all but its
// operators); and Redis 6, which counts CONFIG RESETSTAT as CONFIG, whose
// GETs monitoring sends all the time, so resets are not seen there.
//
// Listing the ways a running server loses keys cannot be complete: a
// keyspace can be put back as it was before, with its marker of this
// very run (REPLICAOF a copy and back, RESTORE of a DUMP after FLUSHDB,
// COPY back, SWAPDB hidden in a MULTI with a RESETSTAT). So the marker
// also counts its generation, "<ms>@<run_id>@<hw>@<gen>": a call that
// wrote a record before the script in the same round trip (ARGV[4] = 1)
// raises it by one, and every call sends the highest generation its
// store has seen answered (ARGV[3]; the script answers the generation as
// the array's third element). A marker of a lower generation than the
// caller's is an older copy of the keyspace, missing records the caller
// saw written, and is replaced (Began). A marker begun, and one without a
// generation (a bare time, an older format) bound, takes TIME in
// microseconds as its generation, or the caller's generation (plus one,
// when begun) when that is higher: a generation grows by one a write,
// and Redis takes fewer than a write a microsecond, so no process has
// seen a generation past TIME in microseconds, and a marker an operator
// wrote by hand is not taken for an older copy by one. A generation stops
// at [MaxGeneration] (after the year 2255 at a write a microsecond): a
// rollback is then no longer told.
//
// A process tells a rollback only by the generation it has itself seen:
// one that made no call since the last write the copy misses (a replica
// that only read, and not since that write) takes the older copy for the
// keyspace until a process that saw the newer generation calls again,
// which begins the keyspace for all. Not seen: a
// rollback that no running process saw the newer generation of (all of
// them restarted since).
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
if not string.match(ARGV[3] or '', '^%d+$') or string.len(ARGV[3]) > 16 or tonumber(ARGV[3]) > ` + maxGeneration + ` then
  return redis.error_reply('ERR the caller\'s generation is not a decimal integer of at most ` + maxGeneration + `')
end
local known = tonumber(ARGV[3])
local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
if not run then
  return redis.error_reply('ERR INFO server answered no run_id: the replay keyspace cannot know its server lost writes')
end
local mem = redis.call('INFO', 'memory')
local maxmem = string.match(mem, '\nmaxmemory:(%d+)')
local policy = string.match(mem, '\nmaxmemory_policy:([%w-]+)')
if not maxmem or not policy then
  return redis.error_reply('ERR ` + noMemoryInfo + `')
end
if maxmem ~= '0' and policy ~= 'noeviction' then
  return redis.error_reply('ERR ` + MayEvict + ` (maxmemory ' .. maxmem .. ', maxmemory-policy ' .. policy .. ')')
end
local evicted = string.match(redis.call('INFO', 'stats'), '\nevicted_keys:(%d+)')
if not evicted then
  return redis.error_reply('ERR ` + noEvictedKeys + `')
end
if evicted ~= '0' then
  run = run .. 'e' .. evicted
end
local stats = redis.call('INFO', 'commandstats')
for tag, name in string.gmatch('aswapdb bmove cdebug dconfig|resetstat', '(%a)([%a|]+)') do
  local key = '\ncmdstat_' .. name .. ':calls='
  local i = string.find(stats, key, 1, true)
  local calls = i and string.match(stats, '^%d+', i + string.len(key))
  if calls and calls ~= '0' then
    run = run .. tag .. calls
  end
end
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' then
  local ms, r, hw, gen = string.match(v, '^([+-]?%d+)@(%x+)@([+-]?%d+)@(%d+)$')
  if not ms then
    ms, r, hw = string.match(v, '^([+-]?%d+)@(%x+)@([+-]?%d+)$')
  end
  if not ms then
    ms, r = string.match(v, '^([+-]?%d+)@(%x+)$')
  end
  if not ms then
    ms = string.match(v, '^[+-]?%d+$')
  end
  if ms and string.len(ms) <= 16 and tonumber(ms) <= now + margin and (r == nil or r == run)
      and (hw == nil or (string.len(hw) <= 16 and tonumber(hw) <= now + margin))
      and (gen == nil or (string.len(gen) <= 16 and tonumber(gen) <= ` + maxGeneration + ` and tonumber(gen) >= known)) then
    local g, write = math.max(known, floor), gen == nil
    if gen then
      g = tonumber(gen)
    end
    if ARGV[4] == '1' then
      g, write = math.min(g + 1, ` + maxGeneration + `), true
    end
    local reach, mark, due = now, now, false
    if hw ~= nil and now < tonumber(hw) + ` + highWaterStep + ` then
      reach, mark = math.max(now, tonumber(hw) + ` + highWaterStep + ` - 1), tonumber(hw)
    else
      due = true
    end
    g = string.format('%.0f', g)
    if write then
      redis.call('SET', KEYS[1], ms .. '@' .. run .. '@' .. string.format('%.0f', mark) .. '@' .. g)
    elseif due then
      redis.pcall('SET', KEYS[1], ms .. '@' .. run .. '@' .. string.format('%.0f', mark) .. '@' .. g)
    end
    if reach > caller + margin then
      return {ms, '` + ClockAhead + `', g}
    end
    if caller > now + margin then
      return {ms, '` + CallerAhead + `', g}
    end
    return {ms, '` + Vouched + `', g}
  end
end
local s, g = string.format('%.0f', now), string.format('%.0f', math.min(math.max(known + 1, floor), ` + maxGeneration + `))
redis.call('SET', KEYS[1], s .. '@' .. run .. '@' .. s .. '@' .. g)
return {s, '` + Began + `', g}
`

// highWaterStep is HighWaterStep as the script's text.
const highWaterStep = "1000"

// MaxGeneration is the highest generation of a marker: the largest
// integer of this form that Lua's numbers (doubles) hold exactly.
const MaxGeneration = 9_000_000_000_000_000

// maxGeneration is MaxGeneration as the script's text.
const maxGeneration = "9000000000000000"

// Messages of [Script]'s error replies about eviction (no single quote:
// they are in the script's Lua strings).
const (
	// MayEvict is the error reply of a server that may evict keys: it
	// names the fix.
	MayEvict = "this Redis may evict keys (its maxmemory is set and its maxmemory-policy is not noeviction), and an evicted record is a forgotten DPoP proof, revocation, spent code or sign-out: set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, or the parameter group of a managed Redis such as ElastiCache, whose default is volatile-lru), or maxmemory 0"
	// noMemoryInfo is the error reply of a server whose INFO memory
	// hides maxmemory or maxmemory_policy.
	noMemoryInfo = "INFO memory answered no maxmemory or maxmemory_policy: the replay keyspace cannot know that its server never evicts a record (it needs maxmemory-policy noeviction, or maxmemory 0)"
	// noEvictedKeys is the error reply of a server whose INFO stats
	// hides evicted_keys.
	noEvictedKeys = "INFO stats answered no evicted_keys: the replay keyspace cannot know that its server never evicted a record"
)
