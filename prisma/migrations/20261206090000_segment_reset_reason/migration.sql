-- R19: a reset the system asked for (the context was full) says so, also in a note sent again after a crash.
ALTER TABLE "segments" ADD COLUMN "reset_reason" TEXT;
