#!/bin/bash
# A sharded sweep as a Slurm job array: one array task per shard. `--shard env` reads
# SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN out of SLURM_ARRAY_TASK_COUNT, so any --array range
# works (0-3, 1-4, …). Each task writes its cells as Parquet files into a shared directory; a
# second job, started only when every task succeeded, merges them:
#   mkdir -p results   # Slurm opens the --output log before the script runs
#   jid=$(sbatch --parsable deploy/batch/sweep-slurm.sh)
#   sbatch --dependency=afterok:$jid --wrap "node bin/switchyard.mjs merge results/offload-sweep --into results/offload-sweep.duckdb"
# Run from the repository root on a shared filesystem (node ≥ 20 and `npm ci` done), or replace
# the command with `apptainer exec switchyard.sif node bin/switchyard.mjs …` for the container image.
# A planner round runs the same way: replace the command with
#   node bin/switchyard.mjs plan experiments/plan-max-rate.yaml --shard env --output results/plan-max-rate/ --no-progress
# (the dashboard reads results/plan-max-rate/ in place once every task has ended).
#SBATCH --job-name=switchyard-sweep
#SBATCH --array=0-3
#SBATCH --cpus-per-task=1
#SBATCH --mem=4G
#SBATCH --time=04:00:00
#SBATCH --output=results/slurm-%A_%a.log
set -euo pipefail
exec node bin/switchyard.mjs sim experiments/offload-sweep.yaml \
  --shard env --output results/offload-sweep --jobs 1 --no-progress
