// Sends outbox items to Discord over REST: posts, edits and reactions. Payloads are stored as
// JSON in the outbox, so they are built here too (`outboxPayload`) and checked again when sent.
// Posts carry a nonce derived from the idempotency key with enforce_nonce, so a post repeated after
// a crash (sent, but not yet recorded) is answered with the first message instead of a duplicate.
import { createHash } from 'node:crypto';
import {
  DiscordAPIError, HTTPError, RateLimitError, RESTJSONErrorCodes, Routes,
  type APIMessage, type REST, type RESTPatchAPIChannelMessageJSONBody, type RESTPostAPIChannelMessageJSONBody,
} from 'discord.js';
import { z } from 'zod';
import { formatSize } from '../../core/format-size.js';
import { PlatformError, ToolError } from '../../core/errors.js';
import type { WorkspaceAttachments } from '../../tools/workspace-attachments.js';
import { PermanentPlatformError, type Deliver, type OutboxDelivery } from '../chat/outbox-sender.js';
import type { ChatDelivery } from '../chat/chat-adapter.js';
import type { OutboxPayload } from '../storage/outbox-store.js';

/**
 * What an outbox item asks Discord to do. 'finish': the answer's first part replaces the message
 * its position streamed into (posted when there is none); 'stream-close': a stream that ended
 * without an answer shows its last text (nothing when there is no such message).
 */
export type DiscordOperation = 'post' | 'update' | 'react' | 'unreact' | 'finish' | 'stream-close' | 'upload';

/** Operations whose target may be missing (the sender then lets deliver decide). */
export const optionalTargetOperations: readonly DiscordOperation[] = ['finish', 'stream-close'];

/** A message body as Discord's REST API takes it (content, embeds, components, …). */
export type MessageBody = RESTPostAPIChannelMessageJSONBody | RESTPatchAPIChannelMessageJSONBody;

/** Payload of 'post' and 'update' (the update's message is the outbox target). */
export interface MessagePayload {
  channelId: string;
  body: MessageBody;
}

/** Payload of 'react' and 'unreact' (our own reaction on someone's message). */
export interface ReactionPayload {
  channelId: string;
  messageId: string;
  emoji: string;
}

const messagePayload = z.object({ channelId: z.string().min(1), body: z.record(z.string(), z.unknown()) });
const reactionPayload = z.object({ channelId: z.string().min(1), messageId: z.string().min(1), emoji: z.string().min(1) });
const uploadPayload = z.object({ channelId: z.string().min(1), sessionId: z.string().min(1), path: z.string().min(1) });

/** Discord's largest upload for a bot in a server without boosts, in bytes (10 MiB). */
export const discordUploadLimit = 10 * 1024 * 1024;

/** Payload of 'upload': a workspace file sent with an answer (attach_file). */
export interface UploadPayload {
  channelId: string;
  sessionId: string;
  path: string;
}

/** A payload as the outbox stores it (plain JSON). */
export function outboxPayload(payload: MessagePayload | ReactionPayload | UploadPayload): OutboxPayload {
  // Bodies are built from discord.js API types (interfaces, no index signature): round-trip them.
  return JSON.parse(JSON.stringify(payload)) as OutboxPayload;
}

/** A Discord message nonce (at most 25 characters) for an idempotency key. */
export function nonceOf(idempotencyKey: string): string {
  return createHash('sha256').update(idempotencyKey).digest('base64url').slice(0, 25);
}

/** The Discord side of the outbox: REST calls for what the renderer stored. */
export class DiscordDelivery implements ChatDelivery {
  constructor(
    private readonly rest: REST,
    /** Reads the workspace files answers send (absent: none can be sent). */
    private readonly files?: Pick<WorkspaceAttachments, 'readForUpload'>,
  ) {}

  /** The outbox deliver function. */
  readonly deliver: Deliver = async (item: OutboxDelivery) => {
    try {
      return item.operation === 'upload' ? await upload(this.rest, item, this.files) : await send(this.rest, item);
    } catch (error) {
      throw toPlatformError(item.operation, error);
    }
  };
}

async function send(rest: REST, item: OutboxDelivery): Promise<{ platformMessageId?: string }> {
  switch (item.operation) {
    case 'post': {
      const { channelId, body } = parse(messagePayload, item);
      const message = (await rest.post(Routes.channelMessages(channelId), { body: { ...body, nonce: nonceOf(item.idempotencyKey), enforce_nonce: true } })) as APIMessage;
      return { platformMessageId: message.id };
    }
    case 'update': {
      const { channelId, body } = parse(messagePayload, item);
      if (!item.targetMessageId) throw new PermanentPlatformError('discord', 'update', `update ${item.idempotencyKey} has no target message`);
      await rest.patch(Routes.channelMessage(channelId, item.targetMessageId), { body });
      return {};
    }
    case 'finish':
    case 'stream-close': {
      const { channelId, body } = parse(messagePayload, item);
      if (item.targetMessageId) {
        try {
          await rest.patch(Routes.channelMessage(channelId, item.targetMessageId), { body });
          return { platformMessageId: item.targetMessageId };
        } catch (error) {
          // The streamed message was deleted meanwhile: the answer is posted instead.
          if (!(error instanceof DiscordAPIError) || error.code !== RESTJSONErrorCodes.UnknownMessage) throw error;
        }
      }
      if (item.operation === 'stream-close') return {};
      const message = (await rest.post(Routes.channelMessages(channelId), { body: { ...body, nonce: nonceOf(item.idempotencyKey), enforce_nonce: true } })) as APIMessage;
      return { platformMessageId: message.id };
    }
    case 'react':
    case 'unreact': {
      const { channelId, messageId, emoji } = parse(reactionPayload, item);
      const route = Routes.channelMessageOwnReaction(channelId, messageId, encodeURIComponent(emoji));
      await (item.operation === 'react' ? rest.put(route) : rest.delete(route));
      return {};
    }
    default:
      throw new PermanentPlatformError('discord', item.operation, `unknown outbox operation "${item.operation}"`);
  }
}

/**
 * A workspace file sent with an answer, as a message attachment (the nonce keeps a retry from
 * sending it twice); one that can no longer be sent is replaced by a note saying why.
 */
async function upload(rest: REST, item: OutboxDelivery, files: Pick<WorkspaceAttachments, 'readForUpload'> | undefined): Promise<{ platformMessageId?: string }> {
  const { channelId, sessionId, path } = parse(uploadPayload, item);
  const nonce = { nonce: nonceOf(item.idempotencyKey), enforce_nonce: true, allowed_mentions: { parse: [] } };
  let file: { name: string; bytes: Buffer };
  try {
    if (!files) throw new ToolError('this service stores no files');
    file = await files.readForUpload(sessionId, path);
    if (file.bytes.length > discordUploadLimit) throw new ToolError(`it is ${formatSize(file.bytes.length)}, over Discord's ${formatSize(discordUploadLimit)} upload limit; it stays in the workspace`);
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    const note = (await rest.post(Routes.channelMessages(channelId), { body: { content: `📎 I could not attach \`${path}\`: ${error.message}.`.slice(0, 2_000), ...nonce } })) as APIMessage;
    return { platformMessageId: note.id };
  }
  const message = (await rest.post(Routes.channelMessages(channelId), {
    body: { ...nonce, attachments: [{ id: 0, filename: file.name }] },
    files: [{ name: file.name, data: file.bytes }],
  })) as APIMessage;
  return { platformMessageId: message.id };
}

function parse<T>(schema: z.ZodType<T>, item: OutboxDelivery): T {
  const result = schema.safeParse(item.payload);
  if (!result.success) throw new PermanentPlatformError('discord', item.operation, `malformed outbox payload for ${item.idempotencyKey}`);
  return result.data;
}

/** Discord refusals that retrying cannot fix fail at once; rate limits and 5xx are retried. */
export function toPlatformError(operation: string, error: unknown): PlatformError {
  if (error instanceof PlatformError) return error;
  if (error instanceof DiscordAPIError) {
    const message = `Discord ${error.method} failed (${error.status}, code ${error.code}): ${error.message}`;
    if (error.status === 429) return new PlatformError('discord', operation, message, retryAfterMs(error), { cause: error });
    if (error.status >= 500 || error.status === 408) return new PlatformError('discord', operation, message, undefined, { cause: error });
    return new PermanentPlatformError('discord', operation, message, undefined, { cause: error });
  }
  if (error instanceof RateLimitError) return new PlatformError('discord', operation, `rate limited: ${error.message}`, error.timeToReset, { cause: error });
  if (error instanceof HTTPError) return new PlatformError('discord', operation, `Discord HTTP ${error.status}: ${error.message}`, undefined, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new PlatformError('discord', operation, `Discord request failed: ${message}`, undefined, { cause: error });
}

function retryAfterMs(error: DiscordAPIError): number | undefined {
  const raw = error.rawError as { retry_after?: unknown };
  return typeof raw.retry_after === 'number' ? Math.ceil(raw.retry_after * 1000) : undefined;
}
