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
  view: z.looseObject({ id: z.string(), type: z.string().optional(), hash: z.string().optional(), private_metadata: z.string().optional() }).optional(),
  response_url: z.string().optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional(), selected_option: z.looseObject({ value: z.string() }).optional() })).min(1),
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

/** The value a view_submission's input carries: typed text, or a chosen option. */
const inputValue = z.looseObject({ value: z.string().nullable().optional(), selected_option: z.looseObject({ value: z.string() }).nullable().optional() });

/** A view_submission (a modal's Submit). */
export const viewSubmissionBody = z.looseObject({
  team: z.looseObject({ id: z.string() }).nullable().optional(),
  user: z.looseObject({ id: z.string(), team_id: z.string().optional() }),
  view: z.looseObject({
    id: z.string(),
    callback_id: z.string(),
    private_metadata: z.string().default(''),
    state: z.looseObject({ values: z.record(z.string(), z.record(z.string(), inputValue)) }).default({ values: {} }),
  }),
});

/** A parsed view_submission. */
export type ViewSubmissionBody = z.infer<typeof viewSubmissionBody>;

/** The team a click or submission came from (a workspace app gets it in `team`, older payloads in `user`). */
export function teamOfBody(body: { team?: { id: string } | null | undefined; user: { team_id?: string | undefined } }): string {
  return body.team?.id ?? body.user.team_id ?? '';
}

/**
 * A button value or modal metadata is ours (JSON we wrote), but a payload can be forged or outlive
 * a format change: anything that does not parse is null (a stale button), never an exception.
 */
export function parseJsonValue<T>(schema: z.ZodType<T>, value: string): T | null {
  try {
    const parsed = schema.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
