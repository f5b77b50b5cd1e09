// The connection to Slack through Bolt: the HTTP Events API mounted on Hippo's own HTTP server
// (POST /slack/events, signatures checked by Bolt, stale requests and ones dated ahead refused), or
// Socket Mode when an app token is set. Interactivity and the slash command arrive the same way.
// One workspace (SLACK_BOT_TOKEN, checked with auth.test), or many (SLACK_CLIENT_ID/SECRET: OAuth
// installs in Postgres; Bolt authorizes each event with its team's installation, see workspaces.ts).
import { App, HTTPReceiver, SocketModeReceiver, webApi, type AppOptions, type Logger as BoltLogger, type ReceiverEvent } from '@slack/bolt';
import type { Config } from '../../config.js';
import { ConfigError, PlatformError } from '../../core/errors.js';
import type { HttpServer } from '../../http-server.js';
import { sendJson } from '../../http-server.js';
import type { Logger } from '../../log.js';
import { createWholeAnswerFetch } from '../http/api-fetch.js';
import { servesWorkspace } from '../chat/access-policy.js';
import { whileAcknowledging } from '../storage/ack-priority.js';
import { decodeEncryptionKey } from '../../config.js';
import { SecretBox } from '../storage/secret-box.js';
import type { SlackStore } from '../storage/slack-store.js';
import { boltLogger } from './bolt-logger.js';
import { SlackInstallationStore } from './workspaces/installation-store.js';
import type { SlackIdentity } from './context.js';
import { mountInstallRoutes } from './workspaces/install.js';
import { authorizeWith, InstalledWorkspaces, SingleWorkspace, type InstalledWorkspacesOptions, type SlackWorkspaces } from './workspaces/workspaces.js';

/**
 * A listener failed on work Slack should send again (storing an inbound message): answered with
 * a 500, so Slack retries. Any other failure (a payload Bolt cannot read) is the request's fault:
 * answered with a 400, nothing stored.
 */
export class SlackRetryableError extends Error {
  override name = 'SlackRetryableError';
}

/**
 * Bolt acknowledges nothing no listener acknowledged: a payload of a type it does not know, or a
 * shortcut or options request Hippo has no listener for, got a 404 after 3 s (and the person an
 * error). Such requests are acknowledged with an empty 200 once the listeners ran; a listener that
 * failed still makes Bolt answer 500 or 400 (the error skips this ack).
 */
class AckingApp extends App {
  override async processEvent(event: ReceiverEvent): Promise<void> {
    let acknowledged = false;
    const ack: ReceiverEvent['ack'] = (response) => {
      acknowledged = true;
      return event.ack(response);
    };
    await super.processEvent({ ...event, ack });
    if (!acknowledged) await event.ack();
  }
}

/** Where Slack posts events, interactions and slash commands in HTTP mode. */
export const slackEventsPath = '/slack/events';

/** A Bolt app bound to our server or socket, with the workspaces it talks to. */
export interface SlackConnection {
  app: App;
  workspaces: SlackWorkspaces;
  /** The installations in Postgres (many-workspace mode), else null. */
  installations: SlackInstallationStore | null;
  mode: 'http' | 'socket';
  /** Starts receiving (after the listeners are registered). */
  start(): Promise<void>;
  stop(): Promise<void>;
  connected(): boolean;
}

/** Options of connectSlack. */
export interface ConnectOptions {
  config: Config;
  http: HttpServer;
  log: Logger;
  /** Where installations and used OAuth states live (many-workspace mode). */
  slack: SlackStore;
  /** Web API retries of network and 5xx failures (default 2; the outbox retries after that). */
  webApiRetries?: number;
  /** Installation cache and token refresh timing (many-workspace mode). */
  workspaces?: InstalledWorkspacesOptions;
  /**
   * False in a worker process (HIPPO_ROLE=worker): Slack's requests go to an ingest process, so
   * neither the events endpoint nor the install routes are served, nor a Socket Mode connection opened.
   */
  serve?: boolean;
}

/** How every Web API client of the app calls Slack (`retries` of a failed call, with back-off). */
export function slackClientOptions(config: Config, logger: BoltLogger, retries: number): webApi.WebClientOptions {
  return {
    logger,
    // Rate limits come back to the outbox as errors with Retry-After instead of blocking the client.
    rejectRateLimitedCalls: true,
    retryConfig: { retries, factor: 2, minTimeout: 500, maxTimeout: 5_000 },
    timeout: 15_000,
    // Each call costs about half the CPU it does through Node's fetch (B4: ~4 calls per acked
    // event), and an answer is capped, as the model's are.
    fetch: createWholeAnswerFetch({ name: 'Slack API response', proxyFromEnvironment: config.NODE_USE_ENV_PROXY }),
    ...(config.SLACK_API_URL ? { slackApiUrl: apiBase(config.SLACK_API_URL) } : {}),
  };
}

/**
 * Builds the Bolt app for one workspace (the token checked with auth.test) or many (installs
 * through /slack/install); throws ConfigError or PlatformError.
 */
export async function connectSlack(options: ConnectOptions): Promise<SlackConnection> {
  const { config, log } = options;
  if (!config.SLACK_APP_TOKEN && !config.SLACK_SIGNING_SECRET) {
    throw new ConfigError('config: SLACK_SIGNING_SECRET is required for the Slack Events API (or set SLACK_APP_TOKEN for Socket Mode)');
  }
  const logger = boltLogger(log);
  const clientOptions = slackClientOptions(config, logger, options.webApiRetries ?? 2);
  const { workspaces, installations, appOptions } = await authorization(options, clientOptions, logger);
  const common = { workspaces, installations };

  if (config.SLACK_APP_TOKEN) {
    const receiver = new SocketModeReceiver({
      appToken: config.SLACK_APP_TOKEN,
      logger,
      // The socket's URL comes from apps.connections.open on the same Web API base. Only the base
      // is passed: the Socket Mode client keeps its own, much more patient, retries for that call.
      ...(config.SLACK_API_URL ? { installerOptions: { clientOptions: { slackApiUrl: apiBase(config.SLACK_API_URL) } } } : {}),
    });
    let connected = false;
    receiver.client.on('connected', () => void (connected = true));
    receiver.client.on('disconnected', () => void (connected = false));
    const app = new AckingApp({ ...appOptions, receiver });
    if (options.serve === false) return { app, ...common, mode: 'socket', start: async () => undefined, stop: async () => undefined, connected: () => true };
    return {
      app, ...common, mode: 'socket',
      start: async () => void (await app.start()),
      stop: () => app.stop().then(() => undefined),
      connected: () => connected,
    };
  }

  const receiver = new HTTPReceiver({
    signingSecret: config.SLACK_SIGNING_SECRET ?? '',
    endpoints: slackEventsPath,
    // The response waits for the listeners, which only store the inbound message (docs/product.md:
    // "inbound messages are written before the ack"); everything slower runs after it.
    processBeforeResponse: true,
    logger,
    processEventErrorHandler: async ({ error, response, logger: boltLog }) => {
      if (response.headersSent) return false;
      const retry = error instanceof SlackRetryableError || (error as { original?: unknown }).original instanceof SlackRetryableError;
      if (!retry) boltLog.warn(`slack request refused: ${error instanceof Error ? error.message : String(error)}`);
      response.writeHead(retry ? 500 : 400);
      response.end();
      return false;
    },
  });
  const app = new AckingApp({ ...appOptions, receiver });
  if (options.serve === false) return { app, ...common, mode: 'http', start: async () => undefined, stop: async () => undefined, connected: () => true };
  let receiving = false;
  // Our HttpServer owns the port; Bolt's receiver only handles the route (it is never started).
  options.http.route('POST', slackEventsPath, (request, response) => {
    if (!receiving) return sendJson(response, 503, { error: 'slack adapter stopped' });
    if (datedAhead(request.headers['x-slack-request-timestamp'], Date.now())) {
      log.warn({ timestamp: String(request.headers['x-slack-request-timestamp']) }, 'slack request refused: dated in the future');
      response.writeHead(401);
      response.end();
      return;
    }
    // Storing the message is what the ack waits for: on PGlite its statements go first.
    whileAcknowledging(response, () => receiver.requestListener(request, response));
  });
  return {
    app, ...common, mode: 'http',
    start: async () => void (receiving = true),
    stop: async () => void (receiving = false),
    connected: () => receiving,
  };
}

/** How far ahead of our clock a signed request may be dated (clock skew), in seconds. */
const futureSkewSeconds = 60;

/**
 * True when a request is dated more than a minute ahead. Bolt refuses requests older than five
 * minutes but not ones from the future, and a signed request dated ahead could be replayed until
 * that date plus five minutes.
 */
export function datedAhead(header: string | string[] | undefined, nowMs: number): boolean {
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(seconds) && seconds > Math.floor(nowMs / 1000) + futureSkewSeconds;
}

/** One workspace from SLACK_BOT_TOKEN, or many from the installations (and their install routes). */
async function authorization(options: ConnectOptions, clientOptions: webApi.WebClientOptions, logger: BoltLogger): Promise<{ workspaces: SlackWorkspaces; installations: SlackInstallationStore | null; appOptions: AppOptions }> {
  const { config, log } = options;
  if (config.SLACK_CLIENT_ID || config.SLACK_CLIENT_SECRET) {
    if (!config.SLACK_CLIENT_ID || !config.SLACK_CLIENT_SECRET) throw new ConfigError('config: SLACK_CLIENT_ID and SLACK_CLIENT_SECRET are both required to install Hippo in many workspaces');
    if (config.SLACK_BOT_TOKEN) throw new ConfigError('config: set either SLACK_BOT_TOKEN (one workspace) or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET (many workspaces), not both');
    const key = decodeEncryptionKey(config.SLACK_TOKEN_ENCRYPTION_KEY ?? '');
    if (!key) throw new ConfigError('config: SLACK_TOKEN_ENCRYPTION_KEY is required with SLACK_CLIENT_ID (32 bytes, base64 or hex, e.g. `openssl rand -base64 32`): installation tokens are encrypted with it');
    const installations = new SlackInstallationStore(options.slack, new SecretBox(key));
    const app = { clientId: config.SLACK_CLIENT_ID, clientSecret: config.SLACK_CLIENT_SECRET };
    const workspaces = new InstalledWorkspaces(installations, app, clientOptions, log, options.workspaces);
    if (options.serve !== false) mountInstallRoutes({ http: options.http, ...app, stateSecret: config.SLACK_STATE_SECRET, store: installations, serves: (teamId) => servesWorkspace(config.ALLOWED_WORKSPACES, teamId), states: options.slack, workspaces, clientOptions, log });
    log.info({ installPath: '/slack/install' }, 'slack-oauth-enabled');
    return { workspaces, installations, appOptions: { authorize: authorizeWith(workspaces), logger, clientOptions } };
  }
  const token = config.SLACK_BOT_TOKEN;
  if (!token) throw new ConfigError('config: SLACK_BOT_TOKEN is required for Slack (or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET to install it in many workspaces)');
  const client = new webApi.WebClient(token, clientOptions);
  const identity = await authTest(client);
  log.info({ teamId: identity.teamId, botUserId: identity.botUserId, mode: config.SLACK_APP_TOKEN ? 'socket' : 'http' }, 'slack-authenticated');
  if (!servesWorkspace(config.ALLOWED_WORKSPACES, identity.teamId)) {
    log.warn({ teamId: identity.teamId }, 'slack: the workspace of SLACK_BOT_TOKEN is not in ALLOWED_WORKSPACES, so every request from it is ignored');
  }
  const workspaces = new SingleWorkspace({ client, identity });
  return { workspaces, installations: null, appOptions: { token, logger, clientOptions, botId: identity.botId, botUserId: identity.botUserId } };
}

async function authTest(client: webApi.WebClient): Promise<SlackIdentity> {
  try {
    const result = await client.auth.test();
    if (!result.team_id || !result.user_id || !result.bot_id) throw new Error('auth.test did not name the team, bot user and bot (is SLACK_BOT_TOKEN a bot token?)');
    return { teamId: result.team_id, botUserId: result.user_id, botId: result.bot_id, ...(result.url ? { url: result.url } : {}) };
  } catch (error) {
    throw authTestError(error);
  }
}

/** Says whether Slack refused the token or could not be reached at all (then the token is not to blame). */
function authTestError(error: unknown): PlatformError {
  const code = (error as { code?: unknown }).code;
  if (code === webApi.ErrorCode.RequestError) {
    return new PlatformError('slack', 'auth.test', `Slack is unreachable: ${innermostMessage(error)} (check the network and SLACK_API_URL)`, undefined, { cause: error });
  }
  if (code === webApi.ErrorCode.HTTPError) {
    const status = (error as { statusCode?: unknown }).statusCode;
    return new PlatformError('slack', 'auth.test', `Slack answered HTTP ${String(status)} to auth.test: try again later (or check SLACK_API_URL)`, undefined, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new PlatformError('slack', 'auth.test', `Slack refused SLACK_BOT_TOKEN: ${message}`, undefined, { cause: error });
}

/** The deepest cause's message ("connect ECONNREFUSED 127.0.0.1:3999"), not the wrappers' "fetch failed". */
function innermostMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    const next: unknown = cause instanceof AggregateError ? cause.errors[0] : cause.cause;
    if (next instanceof Error && next.message) message = next.message;
    cause = next;
  }
  return message;
}

/** The Web API base with the trailing slash the client expects ("https://slack.com/api/"). */
function apiBase(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}
