// The Slack adapter as its integration tests run it: a test database, the fake Slack Web API, the
// agent harness, our HTTP server with the real Bolt receiver, and the adapter wired to all four.
// Without a signing secret it runs Socket Mode instead (SLACK_APP_TOKEN in `env`, the fake Socket
// Mode server's URL in `slack.socketModeUrl`).
import { imageLimitsFor } from '../../src/core/image-limits.js';
import { createChatStorage } from '../../src/adapters/storage/chat-storage.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startSlackAdapter, type SlackAdapter } from '../../src/adapters/slack/index.js';
import type { InstalledWorkspacesOptions } from '../../src/adapters/slack/workspaces/workspaces.js';
import type { FeedbackListener } from '../../src/adapters/chat/answer-feedback.js';
import { attachFileTool } from '../../src/tools/attach-file.js';
import { workspaceTools } from '../../src/tools/workspace.js';
import { WorkspaceAttachments } from '../../src/tools/workspace-attachments.js';
import { DEFAULT_WORKSPACE_LIMITS } from '../../src/tools/workspace-quota.js';
import type { SenderOptions } from '../../src/adapters/chat/outbox-sender.js';
import { parseConfig } from '../../src/config.js';
import { HttpServer } from '../../src/http-server.js';
import { createLogger, type Logger } from '../../src/log.js';
import { formBody, signedHeaders, startFakeSlackApi, type FakeSlackApi, type FakeSlackOptions, type FakeUser } from '../fakes/fake-slack-api.js';
import { createAgentHarness, type AgentHarness, type HarnessOptions } from './agent-harness.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface SlackRig {
  /** Where shared files are saved. */
  attachments: WorkspaceAttachments;
  database: TestDatabase;
  slack: FakeSlackApi;
  harness: AgentHarness;
  http: HttpServer;
  adapter: SlackAdapter;
  /** The Events API URL (events, interactions and slash commands all post here). */
  eventsUrl: string;
  /** Our HTTP server's base URL (install routes, metrics). */
  baseUrl: string;
  /** Posts a body signed with the rig's signing secret (Events API only). */
  post(body: string, contentType: string, headers?: Record<string, string>): Promise<Response>;
  /** A fresh Slack ts, increasing (one counter per rig). */
  nextTs(): string;
  /**
   * Posts one event in its Events API envelope (a fresh event id unless given; `envelope` adds
   * fields such as `api_app_id`) and expects Slack's 200.
   */
  sendEvent(event: Record<string, unknown>, options?: { eventId?: string; envelope?: Record<string, unknown>; headers?: Record<string, string> }): Promise<void>;
  /** `@hippo <text>` as Slack sends it (app_mention), at the root or in a thread; returns its ts. */
  mention(text: string, options?: PersonMessageOptions): Promise<string>;
  /** A person's message in a thread (a message event, no mention); returns its ts. */
  reply(text: string, threadTs: string, options?: Omit<PersonMessageOptions, 'threadTs'>): Promise<string>;
  /** Clicks a button of a message as Slack posts a block_actions interaction (by Ada), and expects 200. */
  click(actionId: string, value: string, message: { ts: string; threadTs: string; channel?: string }, extra?: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}

export interface PersonMessageOptions {
  /** Default UADA. */
  user?: string;
  /** Default the rig's channel. */
  channel?: string;
  /** Default a fresh one. */
  ts?: string;
  threadTs?: string;
}

export interface SlackRigOptions {
  /** The Events API's signing secret; leave it out for Socket Mode. */
  signingSecret?: string;
  slack?: FakeSlackOptions;
  users?: FakeUser[];
  settings?: HarnessOptions['settings'];
  outbox?: SenderOptions;
  /** More environment (access lists, MEMORY_EDITORS, …) on top of the rig's Slack settings. */
  env?: Record<string, string>;
  /** Many workspaces: OAuth credentials and an encryption key instead of SLACK_BOT_TOKEN. */
  oauth?: { encryptionKey: string; stateSecret?: string };
  workspaces?: InstalledWorkspacesOptions;
  onFeedback?: FeedbackListener;
  /** The adapter's logger (default: silent, or TEST_LOG_LEVEL). */
  log?: Logger;
  /** Largest shared or attached file (default 20 MiB). */
  maxFileBytes?: number;
  /** The worker gets the workspace tools and attach_file. */
  withFileTools?: boolean;
  /** More tools for the worker. */
  tools?: HarnessOptions['tools'];
  /** R23: which tool calls wait for a person (default: none). */
  approvals?: HarnessOptions['approvals'];
  /** Where `mention`, `reply` and `click` speak unless told (default C0GENERAL). */
  channel?: string;
}

export async function startSlackRig(options: SlackRigOptions): Promise<SlackRig> {
  const database = await createTestDatabase();
  const slack = await startFakeSlackApi(options.slack ?? {});
  for (const user of options.users ?? []) slack.addUser(user);
  const log = options.log ?? createLogger(process.env['TEST_LOG_LEVEL'] ?? 'silent');
  // Shared files land in a workspace root of the rig's own; images are shown when the settings say so.
  const workspaces = path.join(await mkdtemp(path.join(tmpdir(), 'hippo-slack-rig-')), 'workspaces');
  const attachments = new WorkspaceAttachments({
    root: workspaces, limits: DEFAULT_WORKSPACE_LIMITS, maxFileBytes: options.maxFileBytes ?? 20 * 1024 * 1024,
    images: options.settings?.images ?? false, imageLimits: options.settings?.imageLimits ?? imageLimitsFor('openai', 8), log,
  });
  const tools = [...(options.withFileTools ? [...workspaceTools({ root: workspaces }), attachFileTool(attachments)] : []), ...(options.tools ?? [])];
  const harness = await createAgentHarness({ database, attachments, tools, ...(options.settings ? { settings: options.settings } : {}), ...(options.approvals ? { approvals: options.approvals } : {}) });
  const http = new HttpServer(log);
  const baseUrl = `http://127.0.0.1:${await http.listen(0, { host: '127.0.0.1' })}`;
  const eventsUrl = `${baseUrl}/slack/events`;
  const credentials = options.oauth
    ? {
        SLACK_CLIENT_ID: slack.options.clientId, SLACK_CLIENT_SECRET: slack.options.clientSecret, SLACK_TOKEN_ENCRYPTION_KEY: options.oauth.encryptionKey,
        ...(options.oauth.stateSecret ? { SLACK_STATE_SECRET: options.oauth.stateSecret } : {}),
      }
    : { SLACK_BOT_TOKEN: 'xoxb-test-token' };
  const { signingSecret } = options;
  const parsed = parseConfig({ ...credentials, ...(signingSecret ? { SLACK_SIGNING_SECRET: signingSecret } : {}), SLACK_API_URL: slack.apiUrl, ...options.env });
  if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
  const adapter = await startSlackAdapter({
    config: parsed.config, agent: harness.agent, stores: harness.stores, storage: createChatStorage(database.prisma, database.pool), http, log, attachments,
    webApiRetries: 0, outbox: options.outbox ?? { pollMs: 20, baseBackoffMs: 50 },
    ...(options.workspaces ? { workspaces: options.workspaces } : {}),
    ...(options.onFeedback ? { onFeedback: options.onFeedback } : {}),
  });
  const channel = options.channel ?? 'C0GENERAL';
  let counter = 0;
  const post: SlackRig['post'] = (body, contentType, headers = {}) => {
    if (!signingSecret) throw new Error('slack rig: Socket Mode has no Events API to post to');
    return fetch(eventsUrl, { method: 'POST', headers: { 'content-type': contentType, ...signedHeaders(signingSecret, body), ...headers }, body });
  };
  const nextTs = () => `1700000${String(++counter).padStart(3, '0')}.000100`;
  const expectOk = async (what: string, response: Promise<Response>) => {
    const { status } = await response;
    if (status !== 200) throw new Error(`slack rig: the ${what} got ${status}, not 200`);
  };
  const sendEvent: SlackRig['sendEvent'] = (event, sent = {}) => {
    const body = JSON.stringify({ team_id: slack.teamId, ...sent.envelope, type: 'event_callback', event_id: sent.eventId ?? `Ev${++counter}`, event });
    return expectOk(`${String(event['type'])} event`, post(body, 'application/json', sent.headers));
  };
  const message = (text: string, { user = 'UADA', channel: where = channel, ts = nextTs(), threadTs }: PersonMessageOptions) =>
    ({ user, text, ts, channel: where, event_ts: ts, ...(threadTs ? { thread_ts: threadTs } : {}) });
  return {
    attachments, database, slack, harness, http, adapter, eventsUrl, baseUrl, post, nextTs, sendEvent,
    async mention(text, person = {}) {
      const event = { type: 'app_mention', ...message(`<@${slack.botUserId}> ${text}`, person) };
      await sendEvent(event);
      return event.ts;
    },
    async reply(text, threadTs, person = {}) {
      const event = { type: 'message', channel_type: 'channel', ...message(text, { ...person, threadTs }) };
      await sendEvent(event);
      return event.ts;
    },
    click(actionId, value, clicked, extra = {}) {
      const where = clicked.channel ?? channel;
      const trigger = ++counter;
      const payload = {
        type: 'block_actions', team: { id: slack.teamId, domain: 'hippo' }, user: { id: 'UADA', username: 'ada', name: 'ada', team_id: slack.teamId },
        api_app_id: 'A1', token: 'legacy', trigger_id: `trigger-${trigger}`, response_url: slack.responseUrl(`action-${trigger}`),
        container: { type: 'message', message_ts: clicked.ts, channel_id: where, is_ephemeral: false, thread_ts: clicked.threadTs },
        channel: { id: where, name: 'project' }, message: { type: 'message', ts: clicked.ts, thread_ts: clicked.threadTs, text: '' },
        actions: [{ type: 'button', action_id: actionId, block_id: 'b', value, action_ts: '1' }],
        ...extra,
      };
      return expectOk(`${actionId} click`, post(formBody({ payload: JSON.stringify(payload) }), 'application/x-www-form-urlencoded'));
    },
    async close() {
      await adapter.stop();
      await harness.close();
      await http.close();
      await slack.close();
      await database.drop();
    },
  };
}
