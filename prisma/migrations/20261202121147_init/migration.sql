-- CreateTable
CREATE TABLE "sessions" (
    "id" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "channel_id" TEXT NOT NULL,
    "thread_key" TEXT NOT NULL,
    "memory_space_id" TEXT NOT NULL,
    "title" TEXT NOT NULL DEFAULT '',
    "pause_requested" BOOLEAN NOT NULL DEFAULT false,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "reset_requested" BOOLEAN NOT NULL DEFAULT false,
    "current_segment_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "segments" (
    "id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "ordinal" INTEGER NOT NULL,
    "last_step" INTEGER NOT NULL DEFAULT 0,
    "summarizer_rounds" INTEGER NOT NULL DEFAULT 0,
    "decider_rounds" INTEGER NOT NULL DEFAULT 0,
    "context_tokens" INTEGER NOT NULL DEFAULT 0,
    "carried_messages" INTEGER NOT NULL DEFAULT 0,
    "started_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMP(3),

    CONSTRAINT "segments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "context_messages" (
    "id" BIGSERIAL NOT NULL,
    "segment_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "tool_call_id" TEXT,
    "tool_call_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "is_init" BOOLEAN NOT NULL DEFAULT false,
    "is_marker" BOOLEAN NOT NULL DEFAULT false,
    "memory_run_id" TEXT,
    "search_text" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "context_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memory_spaces" (
    "id" TEXT NOT NULL,
    "platform" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "scope_key" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_spaces_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memory_documents" (
    "id" TEXT NOT NULL,
    "space_id" TEXT NOT NULL,
    "session_key" TEXT NOT NULL DEFAULT '',
    "path" TEXT NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 1,
    "content" TEXT NOT NULL,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "memory_documents_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memory_document_versions" (
    "id" TEXT NOT NULL,
    "document_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "path" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    "author_kind" TEXT NOT NULL,
    "author_id" TEXT NOT NULL DEFAULT '',
    "author_name" TEXT NOT NULL DEFAULT '',
    "memory_run_id" TEXT,
    "reviewed_by" TEXT,
    "reviewed_at" TIMESTAMP(3),
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memory_document_versions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memory_runs" (
    "id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "segment_id" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "round" INTEGER NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'running',
    "fork_point" INTEGER NOT NULL,
    "decision" TEXT,
    "error" TEXT,
    "prompt_tokens" INTEGER NOT NULL DEFAULT 0,
    "cached_tokens" INTEGER NOT NULL DEFAULT 0,
    "completion_tokens" INTEGER NOT NULL DEFAULT 0,
    "transcript" JSONB NOT NULL DEFAULT '[]',
    "started_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMP(3),

    CONSTRAINT "memory_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "steer_messages" (
    "id" BIGSERIAL NOT NULL,
    "session_id" TEXT NOT NULL,
    "platform_message_key" TEXT NOT NULL,
    "author_id" TEXT NOT NULL DEFAULT '',
    "author_name" TEXT NOT NULL DEFAULT '',
    "text" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "received_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "taken_at" TIMESTAMP(3),

    CONSTRAINT "steer_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "processed_events" (
    "key" TEXT NOT NULL,
    "received_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "processed_events_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "model_calls" (
    "id" BIGSERIAL NOT NULL,
    "session_id" TEXT NOT NULL,
    "segment_id" TEXT,
    "memory_run_id" TEXT,
    "role" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "prompt_tokens" INTEGER NOT NULL DEFAULT 0,
    "cached_tokens" INTEGER NOT NULL DEFAULT 0,
    "completion_tokens" INTEGER NOT NULL DEFAULT 0,
    "latency_ms" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "model_calls_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox" (
    "id" BIGSERIAL NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "session_id" TEXT,
    "platform" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "target_key" TEXT,
    "fencing_token" BIGINT,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "platform_message_id" TEXT,
    "last_error" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMP(3),

    CONSTRAINT "outbox_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_leases" (
    "session_id" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "fencing_token" BIGINT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "session_leases_pkey" PRIMARY KEY ("session_id")
);

-- CreateIndex
CREATE INDEX "sessions_memory_space_id_idx" ON "sessions"("memory_space_id");

-- CreateIndex
CREATE UNIQUE INDEX "sessions_platform_workspace_id_channel_id_thread_key_key" ON "sessions"("platform", "workspace_id", "channel_id", "thread_key");

-- CreateIndex
CREATE UNIQUE INDEX "segments_session_id_ordinal_key" ON "segments"("session_id", "ordinal");

-- CreateIndex
CREATE UNIQUE INDEX "context_messages_segment_id_seq_key" ON "context_messages"("segment_id", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "memory_spaces_platform_workspace_id_scope_scope_key_key" ON "memory_spaces"("platform", "workspace_id", "scope", "scope_key");

-- CreateIndex
CREATE UNIQUE INDEX "memory_documents_space_id_session_key_path_key" ON "memory_documents"("space_id", "session_key", "path");

-- CreateIndex
CREATE INDEX "memory_document_versions_memory_run_id_idx" ON "memory_document_versions"("memory_run_id");

-- CreateIndex
CREATE UNIQUE INDEX "memory_document_versions_document_id_version_key" ON "memory_document_versions"("document_id", "version");

-- CreateIndex
CREATE INDEX "memory_runs_session_id_started_at_idx" ON "memory_runs"("session_id", "started_at");

-- CreateIndex
CREATE UNIQUE INDEX "steer_messages_platform_message_key_key" ON "steer_messages"("platform_message_key");

-- CreateIndex
CREATE INDEX "steer_messages_session_id_status_id_idx" ON "steer_messages"("session_id", "status", "id");

-- CreateIndex
CREATE INDEX "model_calls_session_id_role_idx" ON "model_calls"("session_id", "role");

-- CreateIndex
CREATE UNIQUE INDEX "outbox_idempotency_key_key" ON "outbox"("idempotency_key");

-- CreateIndex
CREATE INDEX "outbox_status_next_attempt_at_idx" ON "outbox"("status", "next_attempt_at");

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_memory_space_id_fkey" FOREIGN KEY ("memory_space_id") REFERENCES "memory_spaces"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "segments" ADD CONSTRAINT "segments_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "context_messages" ADD CONSTRAINT "context_messages_segment_id_fkey" FOREIGN KEY ("segment_id") REFERENCES "segments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memory_documents" ADD CONSTRAINT "memory_documents_space_id_fkey" FOREIGN KEY ("space_id") REFERENCES "memory_spaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memory_document_versions" ADD CONSTRAINT "memory_document_versions_document_id_fkey" FOREIGN KEY ("document_id") REFERENCES "memory_documents"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memory_runs" ADD CONSTRAINT "memory_runs_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memory_runs" ADD CONSTRAINT "memory_runs_segment_id_fkey" FOREIGN KEY ("segment_id") REFERENCES "segments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "steer_messages" ADD CONSTRAINT "steer_messages_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "model_calls" ADD CONSTRAINT "model_calls_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "outbox" ADD CONSTRAINT "outbox_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session_leases" ADD CONSTRAINT "session_leases_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
