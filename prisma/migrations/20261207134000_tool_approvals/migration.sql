-- CreateTable
CREATE TABLE "tool_approvals" (
    "id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "segment_id" TEXT NOT NULL,
    "message_seq" INTEGER NOT NULL,
    "call_id" TEXT NOT NULL,
    "tool" TEXT NOT NULL,
    "arguments" TEXT NOT NULL,
    "run_start_step" INTEGER NOT NULL,
    "requested_by" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL DEFAULT 'pending',
    "scope" TEXT NOT NULL DEFAULT 'call',
    "decided_by_id" TEXT,
    "decided_by_name" TEXT,
    "note" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "decided_at" TIMESTAMP(3),

    CONSTRAINT "tool_approvals_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "tool_approvals_session_id_status_idx" ON "tool_approvals"("session_id", "status");

-- CreateIndex
CREATE UNIQUE INDEX "tool_approvals_segment_id_message_seq_call_id_key" ON "tool_approvals"("segment_id", "message_seq", "call_id");

-- AddForeignKey
ALTER TABLE "tool_approvals" ADD CONSTRAINT "tool_approvals_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;


