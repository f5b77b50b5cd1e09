-- CreateTable
CREATE TABLE "slack_installations" (
    "team_id" TEXT NOT NULL,
    "team_name" TEXT NOT NULL DEFAULT '',
    "enterprise_id" TEXT,
    "app_id" TEXT NOT NULL DEFAULT '',
    "bot_user_id" TEXT NOT NULL,
    "bot_id" TEXT NOT NULL,
    "bot_scopes" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "bot_token" TEXT NOT NULL,
    "bot_refresh_token" TEXT,
    "bot_token_expires_at" TIMESTAMP(3),
    "installed_by" TEXT NOT NULL DEFAULT '',
    "installed_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "slack_installations_pkey" PRIMARY KEY ("team_id")
);

-- CreateTable
CREATE TABLE "answer_feedback" (
    "id" BIGSERIAL NOT NULL,
    "platform" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "channel_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "session_id" TEXT,
    "user_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "answer_feedback_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "answer_feedback_platform_channel_id_message_id_user_id_kind_key" ON "answer_feedback"("platform", "channel_id", "message_id", "user_id", "kind");

-- CreateIndex
CREATE INDEX "outbox_platform_message_id_idx" ON "outbox"("platform_message_id");
