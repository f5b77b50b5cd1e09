// What the Discord handlers share: the client, the agent and its stores, the outbox, the log.
import type { Client } from 'discord.js';
import type { Agent } from '../../core/agent.js';
import type { Stores } from '../../core/store.js';
import type { Logger } from '../../log.js';
import type { MemoryGate } from '../chat/memory-access.js';
import type { AccessPolicy } from '../chat/access-policy.js';
import type { OutboxEntry } from '../chat/outbox.js';
import { outboxPayload } from './deliver.js';
import { textBodies } from './message-views.js';

/** Everything an inbound handler needs. */
export interface DiscordContext {
  client: Client;
  agent: Agent;
  stores: Stores;
  outbox: { enqueue(entry: OutboxEntry): Promise<{ inserted: boolean }> };
  /** Who may view and change which memory space (the interaction's place, MEMORY_EDITORS). */
  memory: MemoryGate;
  /** Who may start, steer and reset (ALLOWED_USERS, ALLOWED_CHANNELS, ADMIN_USERS). */
  access: AccessPolicy;
  log: Logger;
}

/**
 * ALLOWED_WORKSPACES: nothing from a server that is not listed reaches a handler (direct messages
 * belong to no server, `guildId` null; ALLOWED_CHANNELS' `dm` decides those).
 */
export function servedHere(context: Pick<DiscordContext, 'access'>, guildId: string | null): boolean {
  return guildId === null || context.access.servesWorkspace(guildId);
}

/** Enqueues a Markdown text (split at 2,000 characters) for a channel; `replyTo` makes it a reply. */
export async function enqueueText(
  context: Pick<DiscordContext, 'outbox'>,
  target: { key: string; sessionId: string | null; channelId: string; replyTo?: string },
  text: string,
): Promise<void> {
  const bodies = textBodies(text);
  for (const [index, body] of bodies.entries()) {
    const reply = target.replyTo && index === 0 ? { message_reference: { message_id: target.replyTo, fail_if_not_exists: false } } : {};
    await context.outbox.enqueue({
      idempotencyKey: bodies.length === 1 ? target.key : `${target.key}:${index + 1}`,
      sessionId: target.sessionId,
      platform: 'discord',
      operation: 'post',
      payload: outboxPayload({ channelId: target.channelId, body: { ...body, ...reply } }),
    });
  }
}
