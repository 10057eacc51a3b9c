-- mxmatrixd queue database, version 1.
--
-- A job is one submission; it expands into runs, one per configuration. Each
-- execution of a run is an attempt (a retry or a requeue after an interruption
-- makes a new one); each attempt stores its outcome (did the run complete,
-- crash, time out ...) and, separately, one verdict per test level.
-- Times are microseconds since the Unix epoch (wall clock).

CREATE TABLE jobs (
        id              INTEGER PRIMARY KEY,
        uid             INTEGER NOT NULL,           -- from SO_PEERCRED at submit
        gid             INTEGER NOT NULL,
        user_name       TEXT,                       -- for display; uid is authoritative
        submitted_at    INTEGER NOT NULL,
        matrix_path     TEXT NOT NULL,
        matrix_digest   TEXT NOT NULL,              -- FNV-1a 64 of the file contents at submit
        feature         TEXT,                       -- as requested (NULL: pins only)
        strategy        TEXT NOT NULL,
        levels          TEXT NOT NULL,              -- JSON array, e.g. ["L1","L1.5"]
        priority        INTEGER NOT NULL DEFAULT 0, -- higher runs first
        request         TEXT NOT NULL,              -- the submit parameters, JSON
        cancelled_at    INTEGER,
        cancelled_by    INTEGER
);

CREATE TABLE runs (
        id              INTEGER PRIMARY KEY,
        job_id          INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        seq             INTEGER NOT NULL,           -- position in the job's plan
        config_key      TEXT NOT NULL,              -- canonical identity: axis=value,...
        config_hash     TEXT NOT NULL,              -- FNV-1a 64 of config_key, 16 hex digits
        config          TEXT NOT NULL,              -- JSON object axis -> value
        reasons         TEXT NOT NULL,              -- JSON array: why the plan holds this run
        expect_fail     TEXT,                       -- known-incompatible reason, or NULL
        spec            TEXT NOT NULL,              -- JSON snapshot: env, argv, expectations, target
        state           TEXT NOT NULL DEFAULT 'queued'
                        CHECK (state IN ('queued', 'running', 'done')),
        attempts        INTEGER NOT NULL DEFAULT 0, -- attempts started so far
        -- Summary of the latest attempt, kept with it in the same transactions so
        -- status and list stay fast with 100 000 runs: pass, fail, xfail (a
        -- known-incompatible run failed as expected), xpass, or the attempt's
        -- outcome when it did not complete (crashed, timeout, ...); NULL while
        -- queued or running.
        result          TEXT,
        queued_at       INTEGER NOT NULL,
        cancelled_at    INTEGER,
        UNIQUE (job_id, seq)
);
CREATE INDEX runs_queued ON runs (job_id, seq) WHERE state = 'queued';
CREATE INDEX runs_running ON runs (state) WHERE state = 'running';
CREATE INDEX runs_job ON runs (job_id, state, result);
CREATE INDEX runs_config ON runs (config_hash);

CREATE TABLE attempts (
        id              INTEGER PRIMARY KEY,
        run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        n               INTEGER NOT NULL,           -- 1, 2, ... per run
        started_at      INTEGER NOT NULL,
        finished_at     INTEGER,
        outcome         TEXT CHECK (outcome IN ('completed', 'infra-error', 'timeout', 'crashed',
                                                'cancelled', 'interrupted')),
        crash_class     TEXT,
        message         TEXT,
        -- The process the runner started, for recovery after a daemon crash:
        -- (boot_id, proc_start) guards against pid reuse, tag finds escaped descendants.
        tag             TEXT NOT NULL UNIQUE,
        boot_id         TEXT,
        pid             INTEGER,
        pgid            INTEGER,
        proc_start      INTEGER,                    -- /proc/PID/stat field 22
        exit_status     INTEGER,
        exit_signal     INTEGER,
        log_path        TEXT,
        UNIQUE (run_id, n)
);
CREATE INDEX attempts_open ON attempts (run_id) WHERE finished_at IS NULL;

CREATE TABLE levels (
        id              INTEGER PRIMARY KEY,
        attempt_id      INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        level           TEXT NOT NULL,              -- "L1", "L1.5", ...
        verdict         TEXT NOT NULL CHECK (verdict IN ('pass', 'fail', 'invalid', 'skipped')),
        started_at      INTEGER NOT NULL,
        finished_at     INTEGER NOT NULL,
        metrics         TEXT,                       -- JSON object
        artifacts       TEXT,                       -- JSON array of paths
        message         TEXT,
        UNIQUE (attempt_id, level)
);

CREATE TABLE events (
        id              INTEGER PRIMARY KEY,
        at              INTEGER NOT NULL,
        job_id          INTEGER REFERENCES jobs(id) ON DELETE CASCADE,
        run_id          INTEGER REFERENCES runs(id) ON DELETE CASCADE,
        kind            TEXT NOT NULL,              -- job-accepted, run-started, run-finished, ...
        uid             INTEGER,                    -- who caused it (NULL: the daemon)
        detail          TEXT                        -- JSON object
);
CREATE INDEX events_job ON events (job_id, id);

-- Daemon-wide settings that must survive restarts (the queue's paused flag).
CREATE TABLE settings (
        key             TEXT PRIMARY KEY,
        value           TEXT NOT NULL
);
