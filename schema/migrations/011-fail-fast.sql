-- mxmatrixd queue database: fail-fast order (issue 19 item 3).
--
-- A fail-fast job runs every configuration's cheap levels (L1, L1.5) before
-- any configuration's expensive ones: each run is started twice, first for
-- its cheap pass (pass 1: those levels only, a server start of its own), and,
-- when that passed, queued again for its full levels (pass 2). The queue
-- takes a job's pass-1 runs before its pass-2 runs. A run whose cheap pass
-- failed is done with that result, and its expensive levels never start.
-- NULL: one pass (fifo, the order before this migration).
ALTER TABLE runs ADD COLUMN pass INTEGER;     -- the pass its next attempt makes: 1 or 2
ALTER TABLE attempts ADD COLUMN pass INTEGER; -- 1: a cheap pass (its levels L1, L1.5)
