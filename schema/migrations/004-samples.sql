-- mxmatrixd queue database: GPU and memory samples (daemon/sampler.c).
--
-- The sampler watches the GPU and the server's memory while an attempt runs
-- (NVML, else nvidia-smi; on unified-memory GPUs such as the GB10 the system's
-- used memory and the server tree's PSS). What is kept is a summary of fixed
-- size however long the attempt ran: start, end, peak, drift, clocks, power,
-- temperature, throttle reasons and a series of at most 120 points (neighbours
-- merged as it fills). One row per attempt and scope: "run" for the whole
-- attempt, or the level that sampled (e.g. "L3", whose leak verdict uses it).

CREATE TABLE samples (
        attempt_id      INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
        scope           TEXT NOT NULL,              -- "run", or a level name
        source          TEXT NOT NULL,              -- nvml, nvidia-smi, proc
        summary         TEXT NOT NULL,              -- JSON object (mx_sample_summary_to_json)
        PRIMARY KEY (attempt_id, scope)
) WITHOUT ROWID;
