-- mxmatrixd queue database, version 3: each attempt's cgroup.
--
-- A run's processes live in a cgroup of their own (daemon/cgroup.h). Its path
-- is recorded when the attempt starts, so that a daemon restarted after
-- kill -9 can kill what is left in it (recover.c) before anything else runs.
-- NULL: the attempt had no cgroup (none writable, or disabled).
ALTER TABLE attempts ADD COLUMN cgroup TEXT;
