-- mxmatrixd queue database, version 6: snapshots stored once; results belong to attempts.
--
-- Snapshots. Every run stored its full snapshot (runs.spec, 3.4 KB for the
-- shipped GB10 matrix): 4.4 KB per run on disk, 438 MB at 100 000 runs,
-- although an overnight sweep submits the same configurations night after
-- night. Snapshots now live in their own table, each distinct text once: a
-- job references the part every one of its runs shares (profile, target,
-- model, levels, matrix), a run the part that is its own (env, argv,
-- expectations); the runner gets the two merged, the run's keys winning.
-- hash is mx_hash(spec) (FNV-1a 64, registered by db.c) and only finds
-- candidates: the text itself decides a match, so a collision cannot make one
-- run execute another's snapshot. Existing runs keep their whole snapshot as
-- their own part; their jobs have none.
--
-- Results. A run showed the result it was given last and the levels of its
-- last attempt, so a retry that was cancelled before it ran showed
-- "cancelled" beside the levels of the attempt before it, and the earlier
-- pass was gone from the job's table. Each attempt now keeps its own result
-- (the vocabulary of runs.result), and a finished run names the attempt whose
-- result and levels it shows (result_attempt): the latest attempt that ran to
-- an end, i.e. whose result is neither cancelled nor interrupted, else the
-- latest one that was cancelled, else none (cancelled before it ever ran).
-- Every attempt, with its levels, stays in the run's history.

CREATE TABLE snapshots (
        id              INTEGER PRIMARY KEY,
        hash            TEXT NOT NULL,              -- mx_hash(spec), 16 hex digits
        spec            TEXT NOT NULL               -- a JSON object
);
CREATE INDEX snapshots_hash ON snapshots (hash);

INSERT INTO snapshots (hash, spec) SELECT mx_hash(spec), spec FROM runs GROUP BY spec ORDER BY min(id);
ALTER TABLE runs ADD COLUMN snapshot INTEGER REFERENCES snapshots(id); -- the run's own part
UPDATE runs SET snapshot = (SELECT s.id FROM snapshots s WHERE s.hash = mx_hash(runs.spec) AND s.spec = runs.spec);
ALTER TABLE runs DROP COLUMN spec;
ALTER TABLE jobs ADD COLUMN snapshot INTEGER REFERENCES snapshots(id); -- the part its runs share, or NULL

ALTER TABLE attempts ADD COLUMN result TEXT;    -- as runs.result; NULL while it runs
ALTER TABLE runs ADD COLUMN result_attempt INTEGER; -- n of the attempt the result is from; NULL unless done

-- What each finished attempt's result was, as queue.c computes it.
UPDATE attempts SET result = CASE
        WHEN outcome = 'completed' THEN
                CASE WHEN (SELECT r.expect_fail IS NOT NULL FROM runs r WHERE r.id = attempts.run_id) THEN
                        CASE WHEN EXISTS (SELECT 1 FROM levels l WHERE l.attempt_id = attempts.id
                                          AND l.verdict IN ('fail', 'invalid')) THEN 'xfail' ELSE 'xpass' END
                ELSE
                        CASE WHEN EXISTS (SELECT 1 FROM levels l WHERE l.attempt_id = attempts.id
                                          AND l.verdict IN ('fail', 'invalid')) THEN 'fail' ELSE 'pass' END
                END
        WHEN outcome = 'crashed' THEN
                CASE WHEN (SELECT r.expect_fail IS NOT NULL FROM runs r WHERE r.id = attempts.run_id)
                     THEN 'xfail' ELSE 'crashed' END
        ELSE outcome END
        WHERE outcome IS NOT NULL;
-- The latest attempt of a finished run got the run's result when it ended: that stays authoritative,
-- unless the run was cancelled after it (a cancelled retry: the attempt had finished before).
UPDATE attempts SET result = (SELECT r.result FROM runs r WHERE r.id = attempts.run_id)
        WHERE outcome IS NOT NULL AND EXISTS (SELECT 1 FROM runs r WHERE r.id = attempts.run_id
                AND r.state = 'done' AND r.attempts = attempts.n AND r.result IS NOT NULL
                AND r.result <> 'cancelled');

UPDATE runs SET result_attempt = coalesce(
                (SELECT max(a.n) FROM attempts a WHERE a.run_id = runs.id
                 AND a.result NOT IN ('cancelled', 'interrupted')),
                (SELECT max(a.n) FROM attempts a WHERE a.run_id = runs.id AND a.result = 'cancelled'))
        WHERE state = 'done';
-- A finished run shows the result of that attempt (the count triggers of 002 follow the change).
UPDATE runs SET result = (SELECT a.result FROM attempts a WHERE a.run_id = runs.id AND a.n = runs.result_attempt)
        WHERE state = 'done' AND result_attempt IS NOT NULL;
