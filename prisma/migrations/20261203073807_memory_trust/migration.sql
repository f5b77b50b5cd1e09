-- AlterTable
ALTER TABLE "memory_document_versions" ADD COLUMN     "reason" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "reverted_run_id" TEXT;

-- AlterTable
ALTER TABLE "segments" ADD COLUMN     "context_tokens_seq" INTEGER NOT NULL DEFAULT 0;

-- CreateIndex
CREATE INDEX "memory_document_versions_reverted_run_id_idx" ON "memory_document_versions"("reverted_run_id");

-- Existing segments measured their last call only: count it as covering every stored message.
UPDATE "segments" s SET "context_tokens_seq" = COALESCE((SELECT max(m."seq") + 1 FROM "context_messages" m WHERE m."segment_id" = s."id"), 0);
