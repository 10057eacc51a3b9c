-- mxmatrixd queue database: L5 confirmation starts (issue 15 item 2).
--
-- When L5 cannot decide a comparison from the server starts there are
-- (unknown: neither beyond nor within its threshold at its alpha), the daemon
-- starts the run and its reference again, A/B/A/B, each on a fresh server,
-- up to L5.confirm_starts a side, and L5 decides again once each round is in.
-- A confirmation start is an attempt of an existing run (confirm_of names the
-- attempt whose L5 it serves); it runs L1 (and L1.5) and L4 only, and its
-- result never becomes its run's result (result_attempt stays). The run whose
-- L5 waits stays queued (confirming names that attempt) until L5 decided, so
-- its job is not done before. Everything is here, so a daemon restarted in
-- the middle goes on where it was.
ALTER TABLE attempts ADD COLUMN confirm_of INTEGER REFERENCES attempts(id) ON DELETE CASCADE;
ALTER TABLE runs ADD COLUMN confirming INTEGER; -- the attempt whose L5 waits; NULL: none

-- The planned starts, in the order they run: per round the run (side
-- 'current'), then its reference (side 'reference').
CREATE TABLE confirmations (
        id              INTEGER PRIMARY KEY,
        for_attempt     INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, -- the run started again
        side            TEXT NOT NULL CHECK (side IN ('current', 'reference')),
        round           INTEGER NOT NULL,
        attempt_id      INTEGER REFERENCES attempts(id) ON DELETE SET NULL -- its start; NULL: queued
);
CREATE INDEX confirmations_for ON confirmations (for_attempt, id);
