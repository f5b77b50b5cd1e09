-- AlterTable
ALTER TABLE "context_messages" ADD COLUMN     "awaiting_delivery" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "memory_runs" ADD COLUMN     "awaiting_delivery" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "segments" ADD COLUMN     "awaiting_delivery" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "start_tokens" INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "context_messages_awaiting_delivery_idx" ON "context_messages"("awaiting_delivery");

-- CreateIndex
CREATE INDEX "memory_runs_awaiting_delivery_idx" ON "memory_runs"("awaiting_delivery");

-- CreateIndex
CREATE INDEX "segments_awaiting_delivery_idx" ON "segments"("awaiting_delivery");
