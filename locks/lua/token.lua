-- token.lua: token-lua written as a lua lock file, to run with
--   lockchaos run --lock lua --opt lua.file=builtin:token.lua ...
-- (bundled in the binary; a copy of this file elsewhere works by its path).
--
-- Every script gets KEYS[1] the lock key, KEYS[2] a companion key (unused
-- here), ARGV[1] the lease's token, ARGV[2] the TTL in ms, ARGV[3] the
-- client's identity. Text above the first section is prepended to each.

local function held()
  return redis.call("GET", KEYS[1]) == ARGV[1]
end

-- @acquire
-- SET NX PX: 1 when set, 0 when someone holds the lock.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return 1
end
return 0

-- @release
-- Compare-and-delete: never delete another lease's key.
if held() then
  return redis.call("DEL", KEYS[1])
end
return 0

-- @renew
-- Compare-and-expire: extend only while the key is still this lease's.
if held() then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
