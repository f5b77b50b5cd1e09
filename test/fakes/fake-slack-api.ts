// A fake Slack Web API speaking the real wire protocol (node:http; form-encoded or JSON bodies in,
// JSON out), so the real @slack/bolt client can be pointed at it. Records every call; answers the
// methods Hippo uses; can be scripted to fail or rate-limit. Keeps the messages it was asked to
// post (with their metadata) per channel and thread, and serves them back through
// conversations.replies/history as Slack does. Also signs requests the way Slack does, for sending
// events and interactions to the real receiver.
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { listenFake, readBodyBytes, sendJson } from './fake-http.js';
import { bearer, FakeSlackTokens, type FakeWorkspace } from './fake-slack-oauth.js';
import { FakeSlackFiles } from './fake-slack-files.js';

/** One recorded call: `/api/<method>` (or `response_url:<id>` for response URLs). */
export interface SlackCall {
  method: string;
  args: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  at: number;
  /** What the fake answered (absent for scripted rate limits). */
  response?: Record<string, unknown>;
}

/**
 * A scripted answer: a Slack error (`ok: false`), a rate limit, a custom body, the normal
 * answer's effect (e.g. the message is posted) with the connection dropped before the response,
 * or the normal answer once `hold` settles (a slow Slack, for as long as the test wants).
 */
export type ScriptedReply = { error: string } | { rateLimitSeconds: number } | { body: Record<string, unknown> } | { dropResponse: true } | { hold: Promise<unknown> };

/** A message the fake holds (posted through chat.postMessage, later edited by chat.update). */
export interface FakeSlackMessage {
  channel: string;
  ts: string;
  /** Set for thread replies; absent for top-level posts. */
  thread_ts?: string;
  text?: string;
  markdown_text?: string;
  blocks?: unknown;
  /** Slack message metadata as posted; returned only to `include_all_metadata` readers. */
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
  user: string;
  bot_id: string;
  /** When the fake received the post (Date.now() ms). */
  postedAt?: number;
  /** A native stream (chat.startStream) not stopped yet: appendStream adds to markdown_text. */
  streaming?: boolean;
  /** Files shared by the message (an upload Hippo completed). */
  files?: unknown[];
  /** A stream's chunks in the order they came (task cards, plan, markdown text). */
  chunks?: unknown[];
}

/** A user the fake knows (users.info). */
export interface FakeUser {
  id: string;
  displayName: string;
  realName?: string;
  /** The user's own team (another organisation's for a Slack Connect member); default: the fake's. */
  teamId?: string;
  /** A multi-channel (`is_restricted`) or single-channel (`is_ultra_restricted`) guest. */
  guest?: 'multi' | 'single';
}

/** Options of `startFakeSlackApi`. */
export interface FakeSlackOptions {
  teamId?: string;
  botUserId?: string;
  botId?: string;
  /** assistant.threads.setStatus answers this error ('not_allowed' by default; null = ok). */
  threadStatusError?: string | null;
  /** chat.postMessage with markdown_text answers this error (null = accepted, the default). */
  markdownTextError?: string | null;
  /** Channels conversations.info reports as private (others are public; D… are DMs). */
  privateChannels?: string[];
  /** Channels conversations.info reports as Slack Connect channels (`is_shared`, `is_ext_shared`). */
  sharedChannels?: string[];
  /** apps.connections.open answers with this Socket Mode URL (see fake-socket-mode.ts); unset: `invalid_auth`. */
  socketModeUrl?: (() => string) | null;
  /** Members of channels (conversations.members); a channel not named has every known user. */
  channelMembers?: Record<string, string[]>;
  /** Members of user groups (usergroups.users.list). */
  userGroups?: Record<string, string[]>;
  /** The app's OAuth credentials (oauth.v2.access checks them). */
  clientId?: string;
  clientSecret?: string;
  /** chat.startStream answers this error (null = streams are allowed, the default). */
  streamError?: string | null;
  /** Block types this workspace's Slack does not know (a message with one answers `invalid_blocks`). */
  unknownBlockTypes?: string[];
}

/** A running fake; see `startFakeSlackApi`. */
export interface FakeSlackApi {
  readonly url: string;
  /** The Web API base for `SLACK_API_URL` / `slackApiUrl` (ends with "/api/"). */
  readonly apiUrl: string;
  readonly teamId: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly calls: readonly SlackCall[];
  readonly options: Required<Omit<FakeSlackOptions, 'userGroups'>>;
  callsTo(method: string): SlackCall[];
  /** Resolves with the first call (already made or future) to `method` matching `predicate`. */
  waitForCall(method: string, predicate?: (call: SlackCall) => boolean, timeoutMs?: number): Promise<SlackCall>;
  /** Queues answers for the next calls to `method`, one per call, before the normal answer. */
  script(method: string, ...replies: ScriptedReply[]): void;
  addUser(user: FakeUser): void;
  /** Sets the messages conversations.replies returns for a thread (before the fake's own posts in it). */
  setThread(channel: string, threadTs: string, messages: Array<Record<string, unknown>>): void;
  /** Every message posted so far, in posting order (edits applied). */
  readonly messages: readonly FakeSlackMessage[];
  /** The posted messages of a thread (replies with this thread_ts), in posting order. */
  threadMessages(channel: string, threadTs: string): FakeSlackMessage[];
  /** A response_url that records what is posted to it. */
  responseUrl(id: string): string;
  /** Workspaces, OAuth codes and tokens (many-workspace tests). */
  readonly tokens: FakeSlackTokens;
  /** Adds a workspace that can install the app. */
  addWorkspace(workspace: FakeWorkspace): void;
  /** Sets the members of a user group (usergroups.users.list). */
  setUserGroup(groupId: string, userIds: string[]): void;
  /** The workspace a call's token belongs to. */
  teamOf(call: SlackCall): string | null;
  /** assistant.threads.setStatus answers `not_allowed` in this thread (others follow threadStatusError). */
  refuseThreadStatus(channel: string, threadTs: string): void;
  /** Shared files (served to the bot token only), downloads and uploads. */
  readonly files: FakeSlackFiles;
  close(): Promise<void>;
}

const jsonFields = new Set(['blocks', 'attachments', 'metadata', 'view', 'user_auth_blocks', 'prompts', 'loading_messages', 'chunks', 'files']);

/** Starts the fake on 127.0.0.1 on a random port. */
export async function startFakeSlackApi(options: FakeSlackOptions = {}): Promise<FakeSlackApi> {
  const settings: Required<Omit<FakeSlackOptions, 'userGroups'>> = {
    teamId: options.teamId ?? 'T0HIPPO',
    botUserId: options.botUserId ?? 'UHIPPOBOT',
    botId: options.botId ?? 'BHIPPO',
    threadStatusError: options.threadStatusError === undefined ? 'not_allowed' : options.threadStatusError,
    markdownTextError: options.markdownTextError ?? null,
    privateChannels: options.privateChannels ?? [],
    sharedChannels: options.sharedChannels ?? [],
    socketModeUrl: options.socketModeUrl ?? null,
    channelMembers: options.channelMembers ?? {},
    clientId: options.clientId ?? '1234.5678',
    clientSecret: options.clientSecret ?? 'fake-client-secret',
    streamError: options.streamError ?? null,
    unknownBlockTypes: options.unknownBlockTypes ?? [],
  };
  const tokens = new FakeSlackTokens(
    { clientId: settings.clientId, clientSecret: settings.clientSecret, appId: 'AHIPPO' },
    { teamId: settings.teamId, teamName: 'Hippo Test', botUserId: settings.botUserId, botId: settings.botId },
  );
  const userGroups = new Map<string, string[]>(Object.entries(options.userGroups ?? {}));
  const calls: SlackCall[] = [];
  const scripts = new Map<string, ScriptedReply[]>();
  const users = new Map<string, FakeUser>();
  const threads = new Map<string, Array<Record<string, unknown>>>();
  const messages: FakeSlackMessage[] = [];
  const messagesByTs = new Map<string, FakeSlackMessage>();
  const waiters = new Set<() => void>();
  const statusRefused = new Set<string>();
  let tsCounter = 0;
  let base = '';
  const files = new FakeSlackFiles(() => base, settings.teamId);
  let viewCounter = 0;

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const bytes = await readBodyBytes(request);
    const raw = bytes.toString('utf8');
    const path = (request.url ?? '').split('?')[0] ?? '';
    if (files.serve(request, response, bytes, path)) return;
    const args = parseBody(raw, String(request.headers['content-type'] ?? ''));
    const method = path.startsWith('/api/') ? path.slice('/api/'.length) : path.startsWith('/respond/') ? `response_url:${path.slice('/respond/'.length)}` : path;
    const call: SlackCall = { method, args, headers: request.headers, at: Date.now() };
    const scripted = scripts.get(method)?.shift();
    if (scripted && 'dropResponse' in scripted) {
      call.response = answer(method, args);
      record(call);
      request.socket.destroy();
      return;
    }
    if (scripted && 'rateLimitSeconds' in scripted) {
      record(call);
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(scripted.rateLimitSeconds) });
      response.end(JSON.stringify({ ok: false, error: 'ratelimited' }));
      return;
    }
    if (scripted && 'hold' in scripted) await scripted.hold;
    call.response = scripted && 'error' in scripted ? { ok: false, error: scripted.error } : scripted && 'body' in scripted ? scripted.body : answerAs(method, args, request.headers);
    record(call);
    sendJson(response, 200, call.response);
  }

  function record(call: SlackCall): void {
    calls.push(call);
    for (const wake of [...waiters]) wake();
  }

  /** The answer for the call's token: OAuth and auth.test by token; a revoked or expired token fails everywhere. */
  function answerAs(method: string, args: Record<string, unknown>, headers: IncomingHttpHeaders): Record<string, unknown> {
    if (method === 'oauth.v2.access') return tokens.exchange(args, headers);
    if (method.startsWith('response_url:')) return answer(method, args);
    const caller = tokens.caller(headers);
    if ('ok' in caller) return caller;
    if (method === 'auth.test') return tokens.authTest(headers);
    if (method === 'auth.revoke') {
      tokens.revoke(String(bearer(headers)));
      return { ok: true, revoked: true };
    }
    if (method === 'usergroups.users.list') {
      const users = userGroups.get(String(args['usergroup']));
      return users ? { ok: true, users } : { ok: false, error: 'no_such_subteam' };
    }
    return answer(method, args);
  }

  function answer(method: string, args: Record<string, unknown>): Record<string, unknown> {
    const fileAnswer = files.answer(method, args, (channel, threadTs, shared) => {
      tsCounter += 1;
      store({ channel, thread_ts: threadTs, text: '', files: shared }, `1800000000.${String(tsCounter).padStart(6, '0')}`);
    });
    if (fileAnswer) return fileAnswer;
    switch (method) {
      case 'chat.postMessage': {
        if (args['markdown_text'] !== undefined && settings.markdownTextError) return { ok: false, error: settings.markdownTextError };
        const refused = messageArgumentsError(args, settings);
        if (refused) return { ok: false, error: refused };
        tsCounter += 1;
        const ts = `1800000000.${String(tsCounter).padStart(6, '0')}`;
        // A user id as the channel posts into the app's direct messages with that person (its D… id).
        const channel = dmOf(String(args['channel']));
        store({ ...args, channel }, ts);
        return { ok: true, channel, ts, message: { ...args, channel, ts, bot_id: settings.botId, user: settings.botUserId } };
      }
      case 'chat.update': {
        const message = messagesByTs.get(`${String(args['channel'])}:${String(args['ts'])}`);
        // A stream's text only grows while it streams: it must be stopped before it is edited.
        if (message?.streaming) return { ok: false, error: 'cant_update_message' };
        if (args['markdown_text'] !== undefined && settings.markdownTextError) return { ok: false, error: settings.markdownTextError };
        const refused = messageArgumentsError(args, settings);
        if (refused) return { ok: false, error: refused };
        if (message) {
          if (args['text'] !== undefined) message.text = String(args['text']);
          if (args['markdown_text'] !== undefined) {
            message.markdown_text = String(args['markdown_text']);
            delete message.text;
            delete message.blocks;
          }
          if (args['blocks'] !== undefined) {
            // The blocks are what the message shows now (its text is their notification fallback).
            message.blocks = args['blocks'];
            delete message.markdown_text;
          }
        }
        return { ok: true, channel: args['channel'], ts: args['ts'], text: args['text'] };
      }
      case 'chat.startStream': {
        if (settings.streamError) return { ok: false, error: settings.streamError };
        const refused = streamArgumentsError(method, args);
        if (refused) return { ok: false, error: refused };
        const channel = String(args['channel']);
        // Outside a DM Slack wants to know whom the stream is for.
        if (!channel.startsWith('D') && args['recipient_user_id'] === undefined) return { ok: false, error: 'invalid_arguments' };
        tsCounter += 1;
        const ts = `1800000000.${String(tsCounter).padStart(6, '0')}`;
        store({ channel, thread_ts: args['thread_ts'], markdown_text: streamText(args) }, ts);
        const started = messagesByTs.get(`${channel}:${ts}`);
        if (started) Object.assign(started, { streaming: true, chunks: Array.isArray(args['chunks']) ? [...(args['chunks'] as unknown[])] : [] });
        return { ok: true, channel, ts };
      }
      case 'chat.appendStream':
      case 'chat.stopStream': {
        const message = messagesByTs.get(`${String(args['channel'])}:${String(args['ts'])}`);
        if (!message?.streaming) return { ok: false, error: 'message_not_in_streaming_state' };
        const refused = streamArgumentsError(method, args) ?? (args['blocks'] === undefined ? null : blocksError(args['blocks'], settings));
        if (refused) return { ok: false, error: refused };
        message.markdown_text = `${message.markdown_text ?? ''}${streamText(args)}`;
        if (Array.isArray(args['chunks'])) message.chunks = [...(message.chunks ?? []), ...(args['chunks'] as unknown[])];
        if (method === 'chat.stopStream') {
          message.streaming = false;
          if (args['blocks'] !== undefined) message.blocks = args['blocks'];
          if (typeof args['metadata'] === 'object' && args['metadata'] !== null) message.metadata = args['metadata'] as NonNullable<FakeSlackMessage['metadata']>;
        }
        return { ok: true, channel: args['channel'], ts: args['ts'] };
      }
      case 'chat.postEphemeral':
        return { ok: true, message_ts: `1800000000.9${String(calls.length).padStart(5, '0')}` };
      case 'users.info': {
        const user = users.get(String(args['user']));
        if (!user) return { ok: false, error: 'user_not_found' };
        return {
          ok: true,
          user: {
            id: user.id, team_id: user.teamId ?? settings.teamId, name: user.displayName.toLowerCase(), real_name: user.realName ?? user.displayName,
            is_restricted: user.guest !== undefined, is_ultra_restricted: user.guest === 'single',
            profile: { display_name: user.displayName, real_name: user.realName ?? user.displayName },
          },
        };
      }
      case 'conversations.replies': {
        const channel = String(args['channel']);
        const threadTs = String(args['ts']);
        const parent = messagesByTs.get(`${channel}:${threadTs}`);
        const all = [
          ...(threads.get(`${channel}:${threadTs}`) ?? []),
          ...(parent && parent.thread_ts === undefined ? [view(parent, args)] : []),
          ...messages.filter((message) => message.channel === channel && message.thread_ts === threadTs).map((message) => view(message, args)),
        ];
        return page(all, args, 1000);
      }
      case 'conversations.history': {
        const channel = String(args['channel']);
        const topLevel = messages.filter((message) => message.channel === channel && message.thread_ts === undefined).reverse();
        return page(topLevel.map((message) => view(message, args)), args, 100);
      }
      case 'conversations.info': {
        const channel = String(args['channel']);
        const isPrivate = (settings.privateChannels ?? []).includes(channel);
        const shared = settings.sharedChannels.includes(channel);
        return { ok: true, channel: { id: channel, is_private: isPrivate, is_im: channel.startsWith('D'), is_mpim: false, is_shared: shared, is_ext_shared: shared } };
      }
      case 'conversations.members': {
        const members = settings.channelMembers[String(args['channel'])] ?? [...users.keys()];
        return { ok: true, members, response_metadata: { next_cursor: '' } };
      }
      case 'views.open':
      case 'views.push':
      case 'views.update':
        viewCounter += 1;
        return { ok: true, view: { id: String(args['view_id'] ?? `V${viewCounter}`), hash: `h${viewCounter}`, ...(typeof args['view'] === 'object' ? args['view'] : {}) } };
      case 'apps.connections.open':
        return settings.socketModeUrl ? { ok: true, url: settings.socketModeUrl() } : { ok: false, error: 'invalid_auth' };
      case 'assistant.threads.setStatus':
        if (statusRefused.has(`${String(args['channel_id'])}:${String(args['thread_ts'])}`)) return { ok: false, error: 'not_allowed' };
        return settings.threadStatusError ? { ok: false, error: settings.threadStatusError } : { ok: true };
      default:
        return { ok: true };
    }
  }

  function store(args: Record<string, unknown>, ts: string): void {
    const threadTs = typeof args['thread_ts'] === 'string' && args['thread_ts'] !== '' ? args['thread_ts'] : undefined;
    const metadata = typeof args['metadata'] === 'object' && args['metadata'] !== null ? (args['metadata'] as FakeSlackMessage['metadata']) : undefined;
    const message: FakeSlackMessage = {
      channel: String(args['channel']),
      ts,
      ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
      ...(args['text'] !== undefined ? { text: String(args['text']) } : {}),
      ...(args['markdown_text'] !== undefined ? { markdown_text: String(args['markdown_text']) } : {}),
      ...(args['blocks'] !== undefined ? { blocks: args['blocks'] } : {}),
      ...(metadata !== undefined ? { metadata } : {}),
      ...(Array.isArray(args['files']) ? { files: args['files'] as unknown[] } : {}),
      user: settings.botUserId,
      bot_id: settings.botId,
      postedAt: Date.now(),
    };
    messages.push(message);
    messagesByTs.set(`${message.channel}:${ts}`, message);
  }

  const http = await listenFake(serve, (response, error) => sendJson(response, 500, { ok: false, error: String(error) }));
  const url = `http://127.0.0.1:${http.port}`;
  base = url;

  return {
    url,
    apiUrl: `${url}/api/`,
    teamId: settings.teamId,
    botUserId: settings.botUserId,
    botId: settings.botId,
    calls,
    options: settings,
    callsTo: (method) => calls.filter((call) => call.method === method),
    waitForCall: (method, predicate, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = calls.find((call) => call.method === method && (!predicate || predicate(call)));
          if (!found) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fake slack: no matching ${method} call within ${timeoutMs} ms; calls: ${calls.map((call) => call.method).join(', ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    script: (method, ...replies) => void scripts.set(method, [...(scripts.get(method) ?? []), ...replies]),
    addUser: (user) => void users.set(user.id, user),
    setThread: (channel, threadTs, thread) => void threads.set(`${channel}:${threadTs}`, thread),
    messages,
    threadMessages: (channel, threadTs) => messages.filter((message) => message.channel === channel && message.thread_ts === threadTs),
    responseUrl: (id) => `${url}/respond/${id}`,
    tokens,
    addWorkspace: (workspace) => tokens.addWorkspace(workspace),
    setUserGroup: (groupId, userIds) => void userGroups.set(groupId, userIds),
    teamOf: (call) => {
      const caller = tokens.caller(call.headers);
      return 'ok' in caller ? null : caller.teamId;
    },
    refuseThreadStatus: (channel, threadTs) => void statusRefused.add(`${channel}:${threadTs}`),
    files,
    close: () => http.close(),
  };
}

/** The app's direct-message conversation with a user ("UADA" → "DUADA"); other ids as they are. */
export function dmOf(channel: string): string {
  return /^[UW][A-Z0-9]+$/.test(channel) ? `D${channel}` : channel;
}

/** Slack's v0 request signature headers for `body` (timestamp in seconds, default now). */
export function signedHeaders(signingSecret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return { 'x-slack-request-timestamp': String(timestamp), 'x-slack-signature': signature };
}

/** The text a message call shows: its Markdown (`markdown_text` or `markdown` blocks, markdownOf), else `text`. */
export function textOf(call: SlackCall): string {
  return markdownOf(call.args) ?? String(call.args['text'] ?? '');
}

/** A form body as Slack sends interactions (`payload=<json>`) and slash commands. */
export function formBody(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

const taskStatuses = new Set(['pending', 'in_progress', 'complete', 'error']);
/** Slack's limits: characters of `markdown_text`, of all `markdown` blocks of a payload together; blocks per message. */
const markdownChars = 12_000;
const blocksPerMessage = 50;
/** What a workspace refuses in blocks. */
type BlockSettings = Pick<Required<FakeSlackOptions>, 'markdownTextError' | 'unknownBlockTypes'>;

/**
 * What Slack refuses in a post or an edit: `markdown_text` beside `blocks` or `text`, or over
 * 12,000 characters; blocks Slack would refuse (blocksError).
 */
function messageArgumentsError(args: Record<string, unknown>, workspace: BlockSettings): string | null {
  if (args['markdown_text'] !== undefined && (args['blocks'] !== undefined || args['text'] !== undefined)) return 'invalid_arguments';
  if (typeof args['markdown_text'] === 'string' && args['markdown_text'].length > markdownChars) return 'msg_too_long';
  return args['blocks'] === undefined ? null : blocksError(args['blocks'], workspace);
}

/**
 * What Slack refuses in a message's blocks: more than 50, a block without a type, a `markdown`
 * block without text, or together over 12,000 characters (or any where the workspace refuses
 * Markdown), a `context_actions` block without 1 to 5 feedback or icon buttons, a type the
 * workspace does not know.
 */
function blocksError(blocks: unknown, workspace: BlockSettings): string | null {
  if (!Array.isArray(blocks) || blocks.length > blocksPerMessage) return 'invalid_blocks';
  let markdown = 0;
  for (const block of blocks as Array<Record<string, unknown>>) {
    if (typeof block !== 'object' || block === null || typeof block['type'] !== 'string') return 'invalid_blocks';
    if (workspace.unknownBlockTypes.includes(block['type'])) return 'invalid_blocks';
    if (block['type'] === 'markdown') {
      if (workspace.markdownTextError) return workspace.markdownTextError;
      if (typeof block['text'] !== 'string' || block['text'] === '') return 'invalid_blocks';
      markdown += block['text'].length;
    }
    if (block['type'] === 'context_actions') {
      const elements = block['elements'];
      if (!Array.isArray(elements) || elements.length === 0 || elements.length > 5) return 'invalid_blocks';
      if (!elements.every((element: Record<string, unknown>) => element['type'] === 'feedback_buttons' || element['type'] === 'icon_button')) return 'invalid_blocks';
    }
  }
  return markdown > markdownChars ? 'msg_blocks_too_long' : null;
}

/**
 * What Slack refuses in a stream call's arguments, or null: `markdown_text` together with
 * `chunks`, a chunk it does not know or that lacks what its type needs (a task's id, title and
 * status; a plan's title; a text's text), text over 12,000 characters, a `task_display_mode`
 * other than timeline or plan (only when starting), blocks before the stop.
 */
function streamArgumentsError(method: string, args: Record<string, unknown>): string | null {
  if (args['markdown_text'] !== undefined && args['chunks'] !== undefined) return 'invalid_arguments';
  if (typeof args['markdown_text'] === 'string' && args['markdown_text'].length > 12_000) return 'msg_too_long';
  if (args['task_display_mode'] !== undefined && (method !== 'chat.startStream' || !['timeline', 'plan'].includes(String(args['task_display_mode'])))) return 'invalid_arguments';
  if (args['blocks'] !== undefined && method !== 'chat.stopStream') return 'invalid_arguments';
  if (args['chunks'] === undefined) return null;
  if (!Array.isArray(args['chunks'])) return 'invalid_chunks';
  for (const chunk of args['chunks'] as Array<Record<string, unknown>>) {
    const text = (field: string) => typeof chunk[field] === 'string' && String(chunk[field]).length > 0;
    if (chunk['type'] === 'markdown_text' && text('text') && String(chunk['text']).length <= 12_000) continue;
    if (chunk['type'] === 'plan_update' && text('title')) continue;
    if (chunk['type'] === 'blocks' && Array.isArray(chunk['blocks'])) continue;
    if (chunk['type'] === 'task_update' && text('id') && text('title') && taskStatuses.has(String(chunk['status']))) continue;
    return 'invalid_chunks';
  }
  return null;
}

/** The text a stream call carries: `markdown_text`, or its markdown_text chunks. */
function streamText(args: Record<string, unknown>): string {
  if (typeof args['markdown_text'] === 'string') return args['markdown_text'];
  const chunks = Array.isArray(args['chunks']) ? (args['chunks'] as Array<{ type?: string; text?: string }>) : [];
  return chunks.filter((chunk) => chunk.type === 'markdown_text').map((chunk) => chunk.text ?? '').join('');
}

/** A held message as a reader sees it: metadata only for `include_all_metadata` readers. */
function view(message: FakeSlackMessage, args: Record<string, unknown>): Record<string, unknown> {
  const { metadata, ...rest } = message;
  const withMetadata = args['include_all_metadata'] === true || args['include_all_metadata'] === 'true';
  return { type: 'message', ...rest, text: message.text ?? message.markdown_text ?? '', ...(withMetadata && metadata ? { metadata } : {}) };
}

/** One page of a list, with Slack's cursor paging (`cursor` is an offset here). */
function page(all: Array<Record<string, unknown>>, args: Record<string, unknown>, defaultLimit: number): Record<string, unknown> {
  const limit = Math.max(1, Number(args['limit'] ?? defaultLimit) || defaultLimit);
  const start = Math.max(0, Number(args['cursor'] ?? 0) || 0);
  const slice = all.slice(start, start + limit);
  const next = start + limit < all.length ? String(start + limit) : '';
  return { ok: true, messages: slice, has_more: next !== '', response_metadata: { next_cursor: next } };
}

function parseBody(raw: string, contentType: string): Record<string, unknown> {
  if (raw === '') return {};
  if (contentType.includes('application/json')) return JSON.parse(raw) as Record<string, unknown>;
  const args: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    args[key] = jsonFields.has(key) ? tryJson(value) : value;
  }
  return args;
}

function tryJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * The Markdown a message or a call's arguments show: its `markdown_text`, else the text of its
 * `markdown` blocks (an answer's last message: its text, then the feedback buttons).
 */
export function markdownOf(message: { markdown_text?: unknown; blocks?: unknown } | Record<string, unknown> | undefined): string | undefined {
  if (message === undefined) return undefined;
  if (message['markdown_text'] !== undefined) return String(message['markdown_text']);
  const blocks = Array.isArray(message['blocks']) ? (message['blocks'] as Array<Record<string, unknown>>) : [];
  const texts = blocks.filter((block) => block['type'] === 'markdown').map((block) => String(block['text']));
  return texts.length === 0 ? undefined : texts.join('');
}

/** How many feedback blocks (`context_actions` with `feedback_buttons`) a message or a call's arguments carry. */
export function feedbackBlocksOf(message: { blocks?: unknown } | Record<string, unknown> | undefined): number {
  const blocks = message && Array.isArray(message['blocks']) ? (message['blocks'] as Array<Record<string, unknown>>) : [];
  return blocks.filter((block) => block['type'] === 'context_actions' && Array.isArray(block['elements']) && (block['elements'] as Array<Record<string, unknown>>).some((element) => element['type'] === 'feedback_buttons')).length;
}
