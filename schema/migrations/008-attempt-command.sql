-- mxmatrixd queue database: the command each attempt started, and plan reasons that read unlike levels.
--
-- A run's snapshot keeps the command as the matrix wrote it ("--port {port}",
-- "{run_dir}" in the environment): show rN printed the template, and a crash
-- could not be reproduced by copy and paste. The runner now records what it
-- started, once the attempt knows its port and directory: a JSON object
-- {"argv": [...], "env": ["VAR=value", ...] (the snapshot's variables,
-- expanded; not the daemon's own environment), "cwd": "..."}. Attempts started
-- before this migration have none; show says so.
ALTER TABLE attempts ADD COLUMN command TEXT;

-- Plan reasons were named after levels (L1-on, L1-off, L5:P, L5-prior:P,
-- L6:axis=value) and were read as level names beside the levels' own L1, L5,
-- L6. They are now feature-on, feature-off, with:P, prior:P, vary:axis=value
-- (matrix/plan.h); the stored runs follow, so criteria find their runs.
UPDATE runs SET reasons = (
        SELECT json_group_array(CASE
                WHEN value LIKE 'L1-off%' THEN 'feature-off' || substr(value, 7)
                WHEN value LIKE 'L1-on%' THEN 'feature-on' || substr(value, 6)
                WHEN value LIKE 'L5-prior:%' THEN 'prior:' || substr(value, 10)
                WHEN value LIKE 'L5:%' THEN 'with:' || substr(value, 4)
                WHEN value LIKE 'L6:%' THEN 'vary:' || substr(value, 4)
                ELSE value END)
        FROM json_each(runs.reasons))
        WHERE json_valid(reasons) AND (reasons LIKE '%"L1-o%' OR reasons LIKE '%"L5%' OR reasons LIKE '%"L6:%');
