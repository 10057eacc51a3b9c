-- mxmatrixd queue database: runs executed as Slurm jobs (executor "slurm", daemon/executor-slurm.c).
--
-- The job name is stored in the transaction that opens the attempt, before
-- sbatch is run: a daemon that dies before sbatch's reply arrives finds the
-- job again by its name instead of submitting it twice. The job id follows
-- sbatch's reply; the node and Slurm's last state follow squeue/sacct.
ALTER TABLE attempts ADD COLUMN slurm_job_name TEXT;
ALTER TABLE attempts ADD COLUMN slurm_job_id INTEGER;
ALTER TABLE attempts ADD COLUMN slurm_node TEXT;
ALTER TABLE attempts ADD COLUMN slurm_state TEXT;
