-- mxmatrixd queue database: runs by configuration key (issue 19 review).
--
-- mxmatrix history finds a configuration by its key (and the runs of it to
-- read its series) and, for axis=value words that are not a whole key, walks
-- the distinct keys one index seek each: without this index each history
-- call read and grouped the whole runs table.
CREATE INDEX runs_config_key ON runs (config_key);
