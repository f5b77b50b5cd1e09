// What the chat adapters keep in Postgres besides the agent's stores: the outbox and answer
// feedback. Built once by the service; the adapters never see the database client.
import type { PrismaClient } from '../../../prisma/generated/client.js';
import { FeedbackStore } from './feedback-store.js';
import { OutboxStore } from './outbox-store.js';

/** The chat adapters' tables. */
export interface ChatStorage {
  outbox: OutboxStore;
  feedback: FeedbackStore;
}

export function createChatStorage(prisma: PrismaClient): ChatStorage {
  return { outbox: new OutboxStore(prisma), feedback: new FeedbackStore(prisma) };
}
