-- AlterTable
ALTER TABLE "segments" ADD COLUMN     "decider_due_in" INTEGER NOT NULL DEFAULT 0;
