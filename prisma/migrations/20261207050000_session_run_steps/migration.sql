-- R21: a run's steps (worker model calls) are counted on the session row, across resets and restarts.
ALTER TABLE "sessions" ADD COLUMN "worker_steps" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "run_start_step" INTEGER NOT NULL DEFAULT 0;
