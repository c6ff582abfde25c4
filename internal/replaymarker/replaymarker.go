// Package replaymarker holds what the two Redis replay stores
// (redisstore.ReplayStore and the reference server's redisreplay.Store)
// share about the keyspace's marker: the script that decides it.
package replaymarker

// Script is the Lua script (EVAL Script 1 marker marginMillis) that
// decides the keyspace's marker on the server, in one atomic step, with
// the server's own clock: it reads TIME (in Unix milliseconds, rounded
// up) and the marker, and writes TIME to the marker only when the marker
// is missing, unreadable (not a string, or not a decimal integer of at
// most 15 digits), or later than TIME + marginMillis. It answers an array
// of two bulk strings: the marker it leaves (the stored value, or TIME)
// and "1" when it wrote it, "0" when it did not.
//
// Because it is decided where it is stored, a marker write that reaches
// the server late (its sender paused, its bytes held in a partitioned
// connection) judges the marker as it is then: it can never replace a
// newer marker (one written after Redis lost its keys) with an older
// time, as a SET of a TIME read in an earlier round trip would. It uses
// one key, so it runs on a Cluster as well (Redis 5 or later: TIME before
// a write needs script effects replication, the default since Redis 5).
const Script = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor((tonumber(t[2]) + 999) / 1000)
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' and string.len(v) <= 16 and string.match(v, '^[+-]?%d+$')
    and tonumber(v) <= now + tonumber(ARGV[1]) then
  return {v, '0'}
end
local s = string.format('%.0f', now)
redis.call('SET', KEYS[1], s)
return {s, '1'}
`
