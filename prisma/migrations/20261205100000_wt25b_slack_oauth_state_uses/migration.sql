-- CreateTable
CREATE TABLE "slack_oauth_state_uses" (
    "state_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "slack_oauth_state_uses_pkey" PRIMARY KEY ("state_hash")
);

-- CreateIndex
CREATE INDEX "slack_oauth_state_uses_expires_at_idx" ON "slack_oauth_state_uses"("expires_at");
