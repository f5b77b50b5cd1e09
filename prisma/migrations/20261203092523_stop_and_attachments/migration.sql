-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "stop_requested_by" TEXT;

-- AlterTable
ALTER TABLE "steer_messages" ADD COLUMN     "attachments" JSONB;
