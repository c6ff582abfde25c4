// Package replaymarker holds what the two Redis replay stores
// (redisstore.ReplayStore and the reference server's redisreplay.Store)
// share about the keyspace's marker: the script that decides it.
package replaymarker

// Script is the Lua script (EVAL Script 1 marker marginMillis) that
// decides the keyspace's marker on the server, in one atomic step, with
// the server's own clock and identity: it reads TIME (in Unix
// milliseconds, rounded up), the server's run_id (INFO server: a new one
// on every start of the server, so on every restart, with or without
// persistence, and every restore from a snapshot or an AOF) and the
// marker, "<ms>@<run_id>", and answers the marker's time when the marker
// was written by this run of the server and is not later than TIME +
// marginMillis. A marker of another run (the server restarted: it may
// have lost the writes after its last snapshot or fsync), missing,
// unreadable (not a string, or a time not a decimal integer of at most
// 15 digits), or later than TIME + marginMillis is replaced by
// "<TIME>@<run_id>": the keyspace begins now. A bare time "<ms>" (written
// by hand: an operator vouching for the keyspace as it is, or an older
// version) is taken for this run: the script binds it, writing
// "<ms>@<run_id>", without moving it. It answers an array of two bulk
// strings: the marker's time (the text stored, or TIME) and "1" when it
// began the keyspace now, "0" when it did not; an error reply, writing
// nothing, when INFO server holds no run_id (a server or proxy that hides
// it could not tell the store it lost writes).
//
// Because it is decided where it is stored, a marker write that reaches
// the server late (its sender paused, its bytes held in a partitioned
// connection) judges the marker as it is then: it can never replace a
// newer marker (one written after Redis lost its keys) with an older
// time, as a SET of a TIME read in an earlier round trip would. It uses
// one key, so it runs on a Cluster as well, on the marker's shard, whose
// run_id it reads (Redis 5 or later: TIME and INFO before a write need
// script effects replication, the default since Redis 5).
const Script = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor((tonumber(t[2]) + 999) / 1000)
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
if not run then
  return redis.error_reply('ERR INFO server answered no run_id: the replay keyspace cannot know its server lost writes')
end
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' then
  local ms, r = string.match(v, '^([+-]?%d+)@(%x+)$')
  if not ms then
    ms = string.match(v, '^[+-]?%d+$')
  end
  if ms and string.len(ms) <= 16 and tonumber(ms) <= now + tonumber(ARGV[1]) then
    if r == run then
      return {ms, '0'}
    end
    if r == nil then
      redis.call('SET', KEYS[1], ms .. '@' .. run)
      return {ms, '0'}
    end
  end
end
local s = string.format('%.0f', now)
redis.call('SET', KEYS[1], s .. '@' .. run)
return {s, '1'}
`
