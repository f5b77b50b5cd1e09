// What the chat adapters keep in Postgres besides the agent's stores: the outbox, answer
// feedback and Slack's installations. Built once by the service; the adapters never see the database client.
import type { PrismaClient } from '../../../prisma/generated/client.js';
import type pg from 'pg';
import { FeedbackStore } from './feedback-store.js';
import { OutboxStore } from './outbox-store.js';
import { SlackStore } from './slack-store.js';

/** The chat adapters' tables. */
export interface ChatStorage {
  outbox: OutboxStore;
  feedback: FeedbackStore;
  /** Slack installations and consumed OAuth states (many-workspace mode). */
  slack: SlackStore;
}

/** `pool`: Postgres's, for the outbox's statements (none on PGlite). */
export function createChatStorage(prisma: PrismaClient, pool?: pg.Pool): ChatStorage {
  return { outbox: new OutboxStore(prisma, pool), feedback: new FeedbackStore(prisma), slack: new SlackStore(prisma) };
}
