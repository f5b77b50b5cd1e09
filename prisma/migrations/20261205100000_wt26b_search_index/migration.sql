-- Full-text search for people and for memory_search (R15) through an index, with the `simple`
-- configuration (no stemming, no stop words): words match in any language, not only English.
CREATE INDEX "context_messages_search_simple_idx" ON "context_messages" USING GIN (to_tsvector('simple', "search_text"));
CREATE INDEX "memory_documents_search_simple_idx" ON "memory_documents" USING GIN (to_tsvector('simple', "content"));
