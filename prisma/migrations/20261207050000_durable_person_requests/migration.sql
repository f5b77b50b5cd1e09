-- A person's remember / forget is carried out by whichever process drives the session: it waits
-- here until a summarizer run takes it (and again when that run is interrupted).
ALTER TABLE "memory_review_events" ADD COLUMN "request_pending" BOOLEAN NOT NULL DEFAULT false;

-- CreateIndex
CREATE INDEX "memory_review_events_request_pending_session_id_idx" ON "memory_review_events"("request_pending", "session_id");
