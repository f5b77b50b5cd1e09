-- Search with a bounded cost (R15): the words of each message and document are stored once, from
-- their first 100,000 characters, and searched through a GIN index on that column. Ranking reads
-- the stored vector instead of parsing every matching text again. The cap keeps a vector far
-- under Postgres's 1 MiB limit (at most about 5 bytes a character, whatever the text), so a huge
-- tool result or document is stored whole and only its searchable part is cut.
DROP INDEX "context_messages_search_simple_idx";
DROP INDEX "memory_documents_search_simple_idx";

ALTER TABLE "context_messages"
  ADD COLUMN "search_vector" tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, left("search_text", 100000))) STORED;
ALTER TABLE "memory_documents"
  ADD COLUMN "search_vector" tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, left("content", 100000))) STORED;

CREATE INDEX "context_messages_search_vector_idx" ON "context_messages" USING GIN ("search_vector");
CREATE INDEX "memory_documents_search_vector_idx" ON "memory_documents" USING GIN ("search_vector");
