// The parts of Slack's payloads Hippo reads, validated with zod: Bolt types them loosely (unions
// over dozens of subtypes), and a payload we do not understand must be ignored, not crash a handler.
import { z } from 'zod';

/** The envelope of an Events API event. */
export const eventEnvelope = z.looseObject({ team_id: z.string(), event_id: z.string().optional() });

const messageFields = {
  user: z.string().optional(),
  bot_id: z.string().optional(),
  subtype: z.string().optional(),
  text: z.string().optional(),
  ts: z.string(),
  thread_ts: z.string().optional(),
};

/** A file shared with a message (file_share). */
const sharedFile = z.looseObject({
  id: z.string(),
  name: z.string().optional(),
  title: z.string().optional(),
  mimetype: z.string().optional(),
  size: z.number().optional(),
  url_private: z.string().optional(),
  url_private_download: z.string().optional(),
});

/** A message or app_mention event (message_changed and message_deleted included). */
export const messageEvent = z.looseObject({
  type: z.string(),
  channel: z.string(),
  channel_type: z.string().optional(),
  ...messageFields,
  files: z.array(sharedFile).max(100).optional(),
  message: z.looseObject(messageFields).optional(),
  deleted_ts: z.string().optional(),
});

/** A parsed message or app_mention event. */
export type MessageEvent = z.infer<typeof messageEvent>;

/** A block_actions interaction. */
export const blockActionBody = z.looseObject({
  team: z.looseObject({ id: z.string() }).nullable().optional(),
  user: z.looseObject({ id: z.string(), name: z.string().optional(), team_id: z.string().optional() }),
  trigger_id: z.string().optional(),
  channel: z.looseObject({ id: z.string() }).optional(),
  message: z.looseObject({ ts: z.string(), thread_ts: z.string().optional() }).optional(),
  view: z.looseObject({ id: z.string(), hash: z.string().optional(), private_metadata: z.string().optional() }).optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
});

/** A parsed block_actions interaction. */
export type BlockActionBody = z.infer<typeof blockActionBody>;

/** A slash command; `thread_ts` is absent in most payloads (a Slack limitation). */
export const slashCommandBody = z.looseObject({
  team_id: z.string(),
  channel_id: z.string(),
  user_id: z.string(),
  text: z.string().default(''),
  thread_ts: z.string().optional(),
});

/** A message of conversations.replies. */
export const threadMessage = z.looseObject({
  ts: z.string(),
  user: z.string().optional(),
  bot_id: z.string().optional(),
  username: z.string().optional(),
  text: z.string().optional(),
  bot_profile: z.looseObject({ name: z.string().optional() }).optional(),
});
