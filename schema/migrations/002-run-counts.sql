-- mxmatrixd queue database, version 2: counts kept by triggers.
--
-- status, list and the per-user limit on queued runs need the number of runs
-- by state and result, and status the number of jobs. Counting them walks an
-- index entry per run or a row per job: with 100 000 runs stored,
-- bench/bench-queue.c measured status at 70-225 ms, list --state active at
-- 180 ms and every submit paying 9-18 ms for the limit check. These tables
-- hold the counts instead. Triggers keep them in the same transaction as the
-- change they count, so they cannot disagree with runs and jobs.
-- A result is '' while a run has none (queued, running), since NULLs would
-- never match in the upserts below. Rows whose n drops to 0 stay.

CREATE TABLE job_counts (
        job_id          INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        state           TEXT NOT NULL,
        result          TEXT NOT NULL,
        n               INTEGER NOT NULL,
        PRIMARY KEY (job_id, state, result)
) WITHOUT ROWID;
-- The jobs with work left, newest first, without visiting the others.
CREATE INDEX job_counts_active ON job_counts (job_id) WHERE state IN ('queued', 'running') AND n > 0;

-- The same counts per submitting user: status sums a few rows, submit reads one.
CREATE TABLE user_counts (
        uid             INTEGER NOT NULL,
        state           TEXT NOT NULL,
        result          TEXT NOT NULL,
        n               INTEGER NOT NULL,
        PRIMARY KEY (uid, state, result)
) WITHOUT ROWID;

-- Jobs per submitting user: status's job count without visiting every job.
CREATE TABLE user_jobs (
        uid             INTEGER PRIMARY KEY,
        n               INTEGER NOT NULL
);

INSERT INTO job_counts (job_id, state, result, n)
        SELECT job_id, state, coalesce(result, ''), count(*) FROM runs GROUP BY 1, 2, 3;
INSERT INTO user_counts (uid, state, result, n)
        SELECT j.uid, r.state, coalesce(r.result, ''), count(*) FROM runs r JOIN jobs j ON j.id = r.job_id
        GROUP BY 1, 2, 3;
INSERT INTO user_jobs (uid, n) SELECT uid, count(*) FROM jobs GROUP BY 1;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO user_jobs (uid, n) VALUES (NEW.uid, 1) ON CONFLICT (uid) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
        UPDATE user_jobs SET n = n - 1 WHERE uid = OLD.uid;
END;

CREATE TRIGGER runs_count_insert AFTER INSERT ON runs BEGIN
        INSERT INTO job_counts (job_id, state, result, n)
                VALUES (NEW.job_id, NEW.state, coalesce(NEW.result, ''), 1)
                ON CONFLICT (job_id, state, result) DO UPDATE SET n = n + 1;
        INSERT INTO user_counts (uid, state, result, n)
                VALUES ((SELECT uid FROM jobs WHERE id = NEW.job_id), NEW.state, coalesce(NEW.result, ''), 1)
                ON CONFLICT (uid, state, result) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER runs_count_update AFTER UPDATE OF state, result ON runs
        WHEN OLD.state IS NOT NEW.state OR OLD.result IS NOT NEW.result BEGIN
        UPDATE job_counts SET n = n - 1
                WHERE job_id = OLD.job_id AND state = OLD.state AND result = coalesce(OLD.result, '');
        UPDATE user_counts SET n = n - 1
                WHERE uid = (SELECT uid FROM jobs WHERE id = OLD.job_id) AND state = OLD.state
                AND result = coalesce(OLD.result, '');
        INSERT INTO job_counts (job_id, state, result, n)
                VALUES (NEW.job_id, NEW.state, coalesce(NEW.result, ''), 1)
                ON CONFLICT (job_id, state, result) DO UPDATE SET n = n + 1;
        INSERT INTO user_counts (uid, state, result, n)
                VALUES ((SELECT uid FROM jobs WHERE id = NEW.job_id), NEW.state, coalesce(NEW.result, ''), 1)
                ON CONFLICT (uid, state, result) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER runs_count_delete AFTER DELETE ON runs BEGIN
        UPDATE job_counts SET n = n - 1
                WHERE job_id = OLD.job_id AND state = OLD.state AND result = coalesce(OLD.result, '');
        UPDATE user_counts SET n = n - 1
                WHERE uid = (SELECT uid FROM jobs WHERE id = OLD.job_id) AND state = OLD.state
                AND result = coalesce(OLD.result, '');
END;

-- A job's runs go first, while the job still names its user for user_counts.
CREATE TRIGGER jobs_delete_runs BEFORE DELETE ON jobs BEGIN
        DELETE FROM runs WHERE job_id = OLD.id;
END;
