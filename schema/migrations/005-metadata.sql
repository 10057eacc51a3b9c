-- mxmatrixd queue database: reproducibility metadata (seed 001 Phase 9).
--
-- One record per attempt, collected before its server starts (daemon/meta.c):
-- a JSON object with every probe's source and value or error, the source
-- trees, a summary in the terms of seed 002's Environment block, and the
-- run's command, env and workload. Large outputs (pip freeze, a long git
-- status) are stored once per distinct content in meta_blobs, and attempts
-- name them in attempt_blobs; a thousand runs on one venv hold one freeze.

CREATE TABLE attempt_metadata (
        attempt_id      INTEGER PRIMARY KEY REFERENCES attempts(id) ON DELETE CASCADE,
        collected_at    INTEGER NOT NULL,
        record          TEXT NOT NULL               -- JSON object (docs/mxmatrix.json.5, METADATA)
);

-- Content-addressed: hash is FNV-1a 64 of the content (16 hex digits), the
-- name records use. Lookups compare the content too, so a collision stores a
-- second row instead of mixing two contents up.
CREATE TABLE meta_blobs (
        id              INTEGER PRIMARY KEY,
        hash            TEXT NOT NULL,
        bytes           INTEGER NOT NULL,
        content         TEXT NOT NULL
);
CREATE INDEX meta_blobs_hash ON meta_blobs (hash);

CREATE TABLE attempt_blobs (
        attempt_id      INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        blob_id         INTEGER NOT NULL REFERENCES meta_blobs(id),
        PRIMARY KEY (attempt_id, blob_id)
) WITHOUT ROWID;
CREATE INDEX attempt_blobs_blob ON attempt_blobs (blob_id);

-- The source trees' commits, for queries across runs: earlier runs of a
-- configuration at other SHAs (L5), configurations already measured at these
-- SHAs (--skip-measured).
CREATE TABLE attempt_sources (
        attempt_id      INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        name            TEXT NOT NULL,              -- as the matrix names it: vllm, flashinfer
        sha             TEXT,                       -- NULL: git could not tell
        dirty           INTEGER,                    -- 0/1; NULL: unknown
        PRIMARY KEY (attempt_id, name)
) WITHOUT ROWID;
CREATE INDEX attempt_sources_sha ON attempt_sources (name, sha);
