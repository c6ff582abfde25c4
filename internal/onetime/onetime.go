// Package onetime holds what the two Redis replay stores
// (redisstore.ReplayStore and the reference server's redisreplay.Store)
// share about one-time records (RecordOnce): the script that writes one
// and reads back who wrote it, in one atomic step.
package onetime

import "fmt"

// Answers of [Script]: the first element of its reply.
const (
	// New: the record was missing and the script wrote it.
	New = "new"
	// Found: the record was there; the second element is its value.
	Found = "found"
	// Absent: the record was missing and the script wrote nothing (an
	// empty writer: a read that only rewrites a record found).
	Absent = "absent"
)

// Finished is the value of a record its writer finished (FinishScript):
// no writer may be it, so that no call finds a finished record its own.
const Finished = "finished"

// MaxWriter bounds a writer's length in bytes (a base64url SHA-256
// digest is 43): the reference server's client reads no longer value.
const MaxWriter = 64

// Script is the Lua script (EVAL Script 1 record writer untilMillis
// rewrite) of a one-time record. It reads the record; when it is missing
// and writer is not empty, it writes writer to it, expiring at untilMillis
// (Unix milliseconds, PXAT), and answers {New, writer}; when it is there,
// it answers {Found, value}, having first written the value back as it is
// (KEEPTTL) when rewrite is "1"; when it is missing and writer is empty, it
// answers {Absent, ""}. Both elements are bulk strings.
//
// The value says who wrote the record, so that its own writer's retry
// (a call that failed after its write reached Redis) recognises it, and
// nobody else's does, in the same round trip as the write. The rewrite of
// a record found is a write on the caller's connection after the record's,
// whoever made it, so that WAIT, sent next on that connection, covers
// the record (WAIT waits for the connection's own writes only); it changes
// neither the value nor the expiry. It uses one key, so it runs on a
// Cluster as well (Redis 6.2 or later: PXAT; scripts replicate their
// effects, the default since Redis 5).
const Script = `local v = redis.call('GET', KEYS[1])
if v then
  if ARGV[3] == '1' then redis.call('SET', KEYS[1], v, 'KEEPTTL') end
  return {'found', v}
end
if ARGV[1] == '' then return {'absent', ''} end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
return {'new', ARGV[1]}
`

// FinishScript is the Lua script (EVAL FinishScript 1 record writer) that
// finishes a one-time record its writer's call is about to answer on: when
// the record holds writer, it writes [Finished] to it, keeping its expiry,
// so that no later call of that writer finds it its own, and answers "1";
// otherwise (a record finished already, another writer's, or none) it
// writes nothing and answers "0". It is the one atomic step that decides
// which of a writer's concurrent or repeated calls answers on the record:
// exactly one call finishes it (the reference server's code redemption
// issues tokens only then), every other is answered "0".
const FinishScript = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('SET', KEYS[1], '` + Finished + `', 'KEEPTTL')
  return '1'
end
return '0'
`

// CheckWriter refuses a writer RecordOnce cannot take (empty, longer than
// MaxWriter, or Finished), with an error whose message begins with prefix.
func CheckWriter(prefix, writer string) error {
	if writer == "" || len(writer) > MaxWriter || writer == Finished {
		return fmt.Errorf("%sRecordOnce: give a writer of 1 to %d bytes (a digest of the request), other than %q", prefix, MaxWriter, Finished)
	}
	return nil
}
