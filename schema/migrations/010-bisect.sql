-- mxmatrixd queue database: bisections (issue 19 item 1, `mxmatrix bisect`).
--
-- A bisection looks for the first bad commit of a source tree between a good
-- and a bad commit: the daemon checks a midpoint out into a work tree of its
-- own, runs the matrix's build step there, runs the configuration as an
-- ordinary job and narrows. Everything it needs to go on is here, so a daemon
-- killed in the middle resumes where it was (run/bisect.c).
CREATE TABLE bisections (
        id              INTEGER PRIMARY KEY,
        uid             INTEGER NOT NULL,
        gid             INTEGER NOT NULL,
        user_name       TEXT,
        created_at      INTEGER NOT NULL,
        finished_at     INTEGER,
        repo            TEXT NOT NULL,              -- the user's git tree (never checked out into)
        good_arg        TEXT NOT NULL,              -- as given
        bad_arg         TEXT NOT NULL,
        good            TEXT,                       -- full SHAs once resolved
        bad             TEXT,
        config_key      TEXT NOT NULL,
        metric          TEXT,                       -- "tg32": an L5 comparison against the good commit
        threshold       REAL,                       -- percent
        level           TEXT,                       -- "L2": the level's verdict decides
        state           TEXT NOT NULL DEFAULT 'resolving'
                        CHECK (state IN ('resolving', 'running', 'done', 'failed', 'cancelled')),
        commits         TEXT,                       -- JSON array, first parent order: good, ..., bad
        template        TEXT NOT NULL,              -- JSON: the job and run snapshot each step submits
        result          TEXT,                       -- JSON: the first bad commit and both sides' numbers
        message         TEXT
);
CREATE INDEX bisections_active ON bisections (id) WHERE state IN ('resolving', 'running');

-- One commit tried: its checkout and build, then the job(s) that ran it.
CREATE TABLE bisect_steps (
        id              INTEGER PRIMARY KEY,
        bisection_id    INTEGER NOT NULL REFERENCES bisections(id) ON DELETE CASCADE,
        idx             INTEGER NOT NULL,           -- position in bisections.commits
        sha             TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('building', 'running', 'good', 'bad', 'skip')),
        worktree        TEXT NOT NULL,
        build_log       TEXT NOT NULL,
        started_at      INTEGER NOT NULL,
        finished_at     INTEGER,
        decision        TEXT,                       -- JSON: the comparison or the verdict that decided
        message         TEXT,
        UNIQUE (bisection_id, idx)
);

-- The runs of a step: the commit's (side 'current') and, for a metric's
-- confirmation starts, the good commit's again (side 'reference').
CREATE TABLE bisect_runs (
        step_id         INTEGER NOT NULL REFERENCES bisect_steps(id) ON DELETE CASCADE,
        run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        side            TEXT NOT NULL CHECK (side IN ('current', 'reference')),
        PRIMARY KEY (step_id, run_id)
);
CREATE INDEX bisect_runs_run ON bisect_runs (run_id);
