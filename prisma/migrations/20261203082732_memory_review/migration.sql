-- AlterTable
ALTER TABLE "memory_document_versions" ADD COLUMN     "session_id" TEXT;

-- AlterTable
ALTER TABLE "memory_documents" ADD COLUMN     "pinned_lines" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "memory_runs" ADD COLUMN     "request" JSONB,
ADD COLUMN     "review_events_through" BIGINT;

-- CreateTable
CREATE TABLE "memory_review_events" (
    "id" BIGSERIAL NOT NULL,
    "space_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "document_path" TEXT,
    "author_id" TEXT NOT NULL DEFAULT '',
    "author_name" TEXT NOT NULL DEFAULT '',
    "text" TEXT NOT NULL DEFAULT '',
    "session_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_review_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memory_edit_drafts" (
    "id" TEXT NOT NULL,
    "document_id" TEXT NOT NULL,
    "base_version" INTEGER NOT NULL,
    "part" TEXT NOT NULL,
    "pieces" TEXT[],
    "author_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_edit_drafts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "memory_review_events_space_id_id_idx" ON "memory_review_events"("space_id", "id");

-- CreateIndex
CREATE INDEX "memory_edit_drafts_created_at_idx" ON "memory_edit_drafts"("created_at");

-- AddForeignKey
ALTER TABLE "memory_review_events" ADD CONSTRAINT "memory_review_events_space_id_fkey" FOREIGN KEY ("space_id") REFERENCES "memory_spaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memory_edit_drafts" ADD CONSTRAINT "memory_edit_drafts_document_id_fkey" FOREIGN KEY ("document_id") REFERENCES "memory_documents"("id") ON DELETE CASCADE ON UPDATE CASCADE;
