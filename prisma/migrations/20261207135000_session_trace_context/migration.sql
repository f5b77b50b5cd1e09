-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "trace_context" TEXT;
