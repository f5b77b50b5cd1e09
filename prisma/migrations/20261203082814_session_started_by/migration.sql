-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "started_by" TEXT;
