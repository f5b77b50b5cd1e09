// A fake Discord for tests: the REST API (node:http, API v10 routes under /api/v10) and the gateway
// (fake-discord-gateway.ts) on one port, so the real discord.js client runs against it unchanged.
// Keeps channels and messages, records every REST call, refuses message bodies over Discord's
// limits (content, embeds) as Discord does, and lets tests play people: messages, edits, deletes,
// button clicks and slash commands arrive as gateway dispatches.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { FakeGateway, type GatewayOptions } from './fake-discord-gateway.js';
import { readBodyBytes } from './fake-http.js';
import { notFound, parseBody, type Reply } from './fake-discord-http.js';
import * as wire from './fake-discord-payloads.js';
import type { FakeChannel, FakeMessage, FakeUser } from './fake-discord-payloads.js';

export type { FakeChannel, FakeMessage, FakeUser };

/** One REST call the fake received. `path` is relative to /api/v10. */
export interface RecordedCall {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Parsed JSON object body (or multipart `payload_json`), else null. */
  body: Record<string, unknown> | null;
  /** The parsed JSON body whatever its shape (arrays for command registration). */
  json: unknown;
  /** Files of a multipart body. */
  files: Array<{ name: string; content: string }>;
  status: number;
  /** When the fake received it (Date.now() ms). */
  at: number;
}

/** A reaction the bot added or removed. */
export interface ReactionRecord {
  channelId: string;
  messageId: string;
  emoji: string;
  removed: boolean;
}

type Failure = { method: string; path: RegExp; status: number; body: Record<string, unknown>; times: number };

/** Starts the fake on a random port. */
export async function startFakeDiscord(options: GatewayOptions = {}): Promise<FakeDiscord> {
  const fake = new FakeDiscord(options);
  await fake.listen();
  return fake;
}

/** The fake's state and the handles tests use. */
export class FakeDiscord {
  readonly bot = wire.user('Hippo', null, true);
  readonly applicationId = wire.snowflake();
  readonly guildId = wire.snowflake();
  /** The bot's managed role in the guild. */
  readonly botRoleId = wire.snowflake();
  /** A plain role of the guild that people can have (e.g. memory editors). */
  readonly teamRoleId = wire.snowflake();
  /** A role people can have (access lists name roles). */
  readonly engineersRoleId = wire.snowflake();
  readonly ada = wire.user('ada', 'Ada Lovelace');
  readonly bob = wire.user('bob', 'Bob');
  readonly otherBot = wire.user('otherbot', null, true);
  readonly general: FakeChannel;
  readonly calls: RecordedCall[] = [];
  readonly reactions: ReactionRecord[] = [];
  readonly gateway: FakeGateway;
  /** Channels by id (text channels, threads, DMs). */
  readonly channels = new Map<string, FakeChannel>();
  private readonly messages = new Map<string, FakeMessage[]>();
  /** Members of private threads, by thread id (GET /channels/:id/thread-members/:user). */
  private readonly threadMembers = new Map<string, Set<string>>();
  private readonly failures: Failure[] = [];
  /** Attachment bytes by CDN path. */
  private readonly cdn = new Map<string, { contentType: string; content: Buffer }>();
  /** CDN paths fetched, in order. */
  readonly cdnFetches: string[] = [];
  private readonly server = createServer((request, response) => void this.serve(request, response));
  private readonly sockets = new Set<Socket>();
  private base = '';

  constructor(options: GatewayOptions) {
    this.general = wire.textChannel(this.guildId, 'general');
    this.channels.set(this.general.id, this.general);
    this.gateway = new FakeGateway({
      ready: (sessionId) => ({
        v: 10, user: this.bot, guilds: [{ id: this.guildId, unavailable: true }], session_id: sessionId, resume_gateway_url: this.gatewayUrl,
        shard: [0, 1], application: { id: this.applicationId, flags: 0 }, private_channels: [], relationships: [], presences: [],
        geo_ordered_rtc_regions: [], guild_join_requests: [], user_settings: {},
      }),
      guilds: () => [wire.guildCreate({ id: this.guildId, name: 'Test Guild', ownerId: this.ada.id, botRoleId: this.botRoleId, roleIds: [this.teamRoleId, this.engineersRoleId] }, [this.general], this.threads(), this.bot)],
    }, options);
    this.server.on('upgrade', (request, socket, head) => this.gateway.handleUpgrade(request, socket, head));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** REST base for discord.js: `rest: { api: fake.apiUrl, version: '10' }`. */
  get apiUrl(): string {
    return `${this.base}/api`;
  }

  get gatewayUrl(): string {
    return `${this.base.replace(/^http/, 'ws')}/gateway`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await this.gateway.close();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ── people and state ───────────────────────────────────────────────────────────────────

  /** An existing thread in #general, or in `parent` (sent to clients as THREAD_CREATE). */
  createThread(name: string, parent: FakeChannel = this.general): FakeChannel {
    const thread = wire.threadChannel(this.guildId, parent.id, name, this.ada.id);
    this.channels.set(thread.id, thread);
    this.gateway.dispatch('THREAD_CREATE', { ...thread, newly_created: true });
    return thread;
  }

  /**
   * Someone adds the bot to another server (GUILD_CREATE after READY), with a #general of its own.
   * Leaving it (DELETE /users/@me/guilds/:id) is recorded; the server stays in the client's cache,
   * as while Discord has not sent GUILD_DELETE yet.
   */
  addGuild(name: string): { guildId: string; general: FakeChannel } {
    const guildId = wire.snowflake();
    const general = wire.textChannel(guildId, 'general');
    this.channels.set(general.id, general);
    this.gateway.dispatch('GUILD_CREATE', wire.guildCreate({ id: guildId, name, ownerId: this.ada.id, botRoleId: wire.snowflake() }, [general], [], this.bot));
    return { guildId, general };
  }

  /** An invite-only thread in #general with these members (THREAD_CREATE of type 12). */
  createPrivateThread(name: string, members: FakeUser[]): FakeChannel {
    const thread = { ...wire.threadChannel(this.guildId, this.general.id, name, members[0]?.id ?? this.ada.id), type: 12 };
    this.channels.set(thread.id, thread);
    this.threadMembers.set(thread.id, new Set(members.map((member) => member.id)));
    this.gateway.dispatch('THREAD_CREATE', { ...thread, newly_created: true });
    return thread;
  }

  /**
   * Another text channel in the guild (sent to clients as CHANNEL_CREATE), in a category
   * (`parentId`) and with permission overwrites when given.
   */
  createTextChannel(name: string, options: { parentId?: string; overwrites?: wire.FakeOverwrite[] } = {}): FakeChannel {
    const channel = { ...wire.textChannel(this.guildId, name), parent_id: options.parentId ?? null, permission_overwrites: options.overwrites ?? [] };
    this.channels.set(channel.id, channel);
    this.gateway.dispatch('CHANNEL_CREATE', channel);
    return channel;
  }

  /** A category (type 4) with permission overwrites (CHANNEL_CREATE). */
  createCategory(name: string, overwrites: wire.FakeOverwrite[] = []): FakeChannel {
    const category = { ...wire.textChannel(this.guildId, name), type: 4, permission_overwrites: overwrites };
    this.channels.set(category.id, category);
    this.gateway.dispatch('CHANNEL_CREATE', category);
    return category;
  }

  /** Sets the @everyone role's permissions (GUILD_ROLE_UPDATE), e.g. all but View Channel. */
  setEveryonePermissions(permissions: bigint): void {
    this.gateway.dispatch('GUILD_ROLE_UPDATE', { guild_id: this.guildId, role: wire.everyoneRole(this.guildId, permissions) });
  }

  /** A DM channel between `recipient` and the bot (known to the fake only, as on Discord). */
  createDm(recipient: FakeUser = this.ada): FakeChannel {
    const channel = wire.dmChannel(recipient);
    this.channels.set(channel.id, channel);
    return channel;
  }

  /**
   * A message by `author` in `channel`; `mention` prefixes `<@bot>` (`'role'`: the bot's role);
   * `files` become attachments served by the fake's CDN path. Stored and dispatched.
   */
  say(channel: FakeChannel, content: string, options: { author?: FakeUser; mention?: boolean | 'role'; nick?: string | null; dispatch?: boolean; roles?: string[]; files?: Array<{ name: string; contentType: string; content: Buffer }> } = {}): FakeMessage {
    const author = options.author ?? this.ada;
    const role = options.mention === 'role';
    const text = options.mention ? `${role ? `<@&${this.botRoleId}>` : `<@${this.bot.id}>`} ${content}` : content;
    const created = wire.message(channel, author, text, { mentions: options.mention === true ? [this.bot] : [], mentionRoles: role ? [this.botRoleId] : [], nick: options.nick ?? null, roles: options.roles ?? [] });
    created['attachments'] = (options.files ?? []).map((file) => {
      const id = wire.snowflake();
      const url = `${this.base}/attachments/${channel.id}/${id}/${encodeURIComponent(file.name)}`;
      this.cdn.set(`/attachments/${channel.id}/${id}/${file.name}`, file);
      return { id, filename: file.name, size: file.content.length, url, proxy_url: url, content_type: file.contentType };
    });
    this.store(created);
    if (options.dispatch !== false) this.gateway.dispatch('MESSAGE_CREATE', created);
    return created;
  }

  /** Delivers a MESSAGE_CREATE again (a gateway replay). */
  redeliver(payload: FakeMessage): void {
    this.gateway.dispatch('MESSAGE_CREATE', payload);
  }

  edit(payload: FakeMessage, content: string): FakeMessage {
    Object.assign(payload, { content, edited_timestamp: new Date().toISOString() });
    this.gateway.dispatch('MESSAGE_UPDATE', payload);
    return payload;
  }

  remove(payload: FakeMessage): void {
    this.messages.set(payload.channel_id, this.messagesIn(payload.channel_id).filter((entry) => entry.id !== payload.id));
    this.gateway.dispatch('MESSAGE_DELETE', { id: payload.id, channel_id: payload.channel_id, ...(payload.guild_id ? { guild_id: payload.guild_id } : {}) });
  }

  /** A click on a button of a bot message; returns the interaction (its token names the replies). */
  click(note: FakeMessage, customId: string, by: FakeUser = this.ada, roles: string[] = []): { id: string; token: string } {
    const channel = this.channelOf(note.channel_id);
    const payload = wire.interaction({ applicationId: this.applicationId, channel, by, type: 3, data: { custom_id: customId, component_type: 2 }, message: note, roles });
    this.gateway.dispatch('INTERACTION_CREATE', payload);
    return payload;
  }

  /** A choice in a select menu of a bot message (`channel` overrides where it happens). */
  select(note: FakeMessage, customId: string, values: string[], by: FakeUser = this.ada, options: { channel?: FakeChannel; roles?: string[] } = {}): { id: string; token: string } {
    const channel = options.channel ?? this.channelOf(note.channel_id);
    const payload = wire.interaction({ applicationId: this.applicationId, channel, by, type: 3, data: { custom_id: customId, component_type: 3, values }, message: note, ...(options.roles ? { roles: options.roles } : {}) });
    this.gateway.dispatch('INTERACTION_CREATE', payload);
    return payload;
  }

  /** A click like `click`, with the member's roles, or in another channel (another guild's, even). */
  clickAs(note: FakeMessage, customId: string, by: FakeUser, options: { channel?: FakeChannel; roles?: string[] } = {}): { id: string; token: string } {
    const channel = options.channel ?? this.channelOf(note.channel_id);
    const payload = wire.interaction({ applicationId: this.applicationId, channel, by, type: 3, data: { custom_id: customId, component_type: 2 }, message: note, ...(options.roles ? { roles: options.roles } : {}) });
    this.gateway.dispatch('INTERACTION_CREATE', payload);
    return payload;
  }

  /** A modal submitted in `channel`: its custom id and the values of its text inputs by custom id. */
  submitModal(channel: FakeChannel, customId: string, values: Record<string, string>, by: FakeUser = this.ada, roles?: string[]): { id: string; token: string } {
    const components = Object.entries(values).map(([id, value]) => ({ type: 1, components: [{ type: 4, custom_id: id, value }] }));
    const payload = wire.interaction({ applicationId: this.applicationId, channel, by, type: 5, data: { custom_id: customId, components }, ...(roles ? { roles } : {}) });
    this.gateway.dispatch('INTERACTION_CREATE', payload);
    return payload;
  }

  /** `by` reacts with a Unicode `emoji` on a message (MESSAGE_REACTION_ADD, with their member in a guild). */
  react(target: FakeMessage, emoji: string, by: FakeUser = this.ada, roles: string[] = []): void {
    const channel = this.channelOf(target.channel_id);
    const guildId = channel.guild_id;
    this.gateway.dispatch('MESSAGE_REACTION_ADD', {
      user_id: by.id, message_id: target.id, channel_id: channel.id, emoji: { id: null, name: emoji }, burst: false, type: 0,
      ...(guildId ? { guild_id: guildId, member: wire.member(by, null, roles) } : {}),
    });
  }

  /** `/hippo verb:<verb>` in `channel`. */
  slash(channel: FakeChannel, verb: string, by: FakeUser = this.ada, roles: string[] = []): { id: string; token: string } {
    const data = { id: 'cmd-hippo', name: 'hippo', type: 1, options: [{ name: 'verb', type: 3, value: verb }] };
    const payload = wire.interaction({ applicationId: this.applicationId, channel, by, type: 2, data, roles });
    this.gateway.dispatch('INTERACTION_CREATE', payload);
    return payload;
  }

  /** Current messages of a channel, oldest first. */
  messagesIn(channelId: string): FakeMessage[] {
    return this.messages.get(channelId) ?? [];
  }

  /** Messages the bot posted in a channel, oldest first. */
  botMessagesIn(channelId: string): FakeMessage[] {
    return this.messagesIn(channelId).filter((entry) => entry.author.id === this.bot.id);
  }

  /** REST calls whose method and path match. */
  callsTo(method: string, path: RegExp): RecordedCall[] {
    return this.calls.filter((call) => call.method === method && path.test(call.path));
  }

  /** Makes the next `times` matching calls fail with `status` and a Discord error body. */
  fail(method: string, path: RegExp, status: number, body: Record<string, unknown> = { message: 'fake failure', code: 0 }, times = 1): void {
    this.failures.push({ method, path, status, body, times });
  }

  /** Polls `probe` until it returns a value other than undefined/false. */
  async waitFor<T>(probe: () => T | undefined | false, timeoutMs = 10_000, what = 'condition'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`fake discord: timed out waiting for ${what}; calls:\n${this.calls.map((call) => `${call.method} ${call.path} ${call.status}`).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
  }

  private threads(): FakeChannel[] {
    return [...this.channels.values()].filter((channel) => channel.type === 11);
  }

  private channelOf(id: string): FakeChannel {
    const channel = this.channels.get(id);
    if (!channel) throw new Error(`fake discord: no channel ${id}`);
    return channel;
  }

  private store(entry: FakeMessage): void {
    this.messages.set(entry.channel_id, [...this.messagesIn(entry.channel_id), entry]);
  }

  // ── REST ───────────────────────────────────────────────────────────────────────────────

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.base);
    // Decoded per segment: "@original" and reaction emoji arrive percent-encoded.
    const path = url.pathname.replace(/^\/api\/v10/, '').split('/').map(decodeURIComponent).join('/');
    const raw = await readBodyBytes(request);
    if (path.startsWith('/attachments/')) {
      this.cdnFetches.push(path);
      const file = this.cdn.get(path);
      response.writeHead(file ? 200 : 404, { 'content-type': file?.contentType ?? 'text/plain' });
      response.end(file?.content ?? 'Not Found');
      return;
    }
    const { json, files } = parseBody(request.headers['content-type'] ?? '', raw);
    const body = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : null;
    const method = request.method ?? 'GET';
    const failure = this.failures.find((entry) => entry.method === method && entry.path.test(path) && entry.times > 0);
    let reply: Reply;
    if (failure) {
      failure.times -= 1;
      reply = { status: failure.status, body: failure.body };
    } else {
      reply = this.route(method, path, url.searchParams, body, json);
    }
    this.calls.push({ method, path, query: url.searchParams, body, json, files, status: reply.status, at: Date.now() });
    if (reply.status === 204) {
      response.writeHead(204); // discord.js reads a JSON content-type as a body to parse
      response.end();
      return;
    }
    response.writeHead(reply.status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(reply.body ?? {}));
  }

  private route(method: string, path: string, query: URLSearchParams, body: Record<string, unknown> | null, json: unknown): Reply {
    const parts = path.split('/').filter(Boolean);
    const [head, id, sub, subId, leaf] = parts;
    if (method === 'GET' && path === '/gateway/bot') {
      return { status: 200, body: { url: this.gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } } };
    }
    if (method === 'GET' && path === '/users/@me') return { status: 200, body: this.bot };
    if (method === 'DELETE' && head === 'users' && id === '@me' && sub === 'guilds' && subId) return { status: 204 };
    if (head === 'channels' && id) return this.channelRoute(method, id, sub, subId, leaf, parts, query, body ?? {});
    if (head === 'interactions' && method === 'POST' && parts[3] === 'callback') {
      return query.get('with_response') === 'true' ? { status: 200, body: { interaction: { id, type: body?.['type'] } } } : { status: 204 };
    }
    if (head === 'webhooks' && sub) {
      // Follow-ups and edits of interaction replies: answer with a message object.
      return { status: 200, body: { ...wire.message(this.general, this.bot, String(body?.['content'] ?? '')), webhook_id: this.applicationId, flags: body?.['flags'] ?? 0 } };
    }
    if (head === 'applications' && method === 'PUT') {
      const commands = Array.isArray(json) ? (json as Array<Record<string, unknown>>) : [];
      return { status: 200, body: commands.map((command) => ({ ...command, id: wire.snowflake(), application_id: this.applicationId, version: '1' })) };
    }
    return notFound();
  }

  private channelRoute(method: string, channelId: string, sub: string | undefined, messageId: string | undefined, leaf: string | undefined, parts: string[], query: URLSearchParams, body: Record<string, unknown>): Reply {
    const channel = this.channels.get(channelId);
    if (!channel) return { status: 404, body: { message: 'Unknown Channel', code: 10003 } };
    if (method === 'GET' && !sub) return { status: 200, body: channel };
    if (sub === 'typing' && method === 'POST') return { status: 204 };
    if (sub === 'thread-members' && method === 'GET' && messageId) {
      // Public threads: anyone who can see the channel; private ones: their members only.
      const members = this.threadMembers.get(channelId);
      if (channel.type !== 11 && channel.type !== 12) return { status: 400, body: { message: 'Invalid Thread', code: 50024 } };
      if (members && !members.has(messageId)) return { status: 404, body: { message: 'Unknown Member', code: 10007 } };
      return { status: 200, body: { id: channelId, user_id: messageId, join_timestamp: new Date().toISOString(), flags: 0 } };
    }
    if (sub !== 'messages') return notFound();
    if (!messageId) {
      if (method === 'GET') return { status: 200, body: this.history(channelId, query) };
      if (method === 'POST') return this.post(channel, body);
      return notFound();
    }
    const target = this.messagesIn(channelId).find((entry) => entry.id === messageId);
    if (!target) return { status: 404, body: { message: 'Unknown Message', code: 10008 } };
    if (!leaf && method === 'GET') return { status: 200, body: target };
    if (!leaf && method === 'PATCH') {
      const invalid = invalidBody(body);
      if (invalid) return invalid;
      for (const field of ['content', 'embeds', 'components', 'flags'] as const) if (field in body) Object.assign(target, { [field]: body[field] });
      this.gateway.dispatch('MESSAGE_UPDATE', target);
      return { status: 200, body: target };
    }
    if (leaf === 'reactions' && (method === 'PUT' || method === 'DELETE')) {
      this.reactions.push({ channelId, messageId, emoji: parts[5] ?? '', removed: method === 'DELETE' });
      return { status: 204 };
    }
    if (leaf === 'threads' && method === 'POST') {
      if (this.channels.has(messageId)) return { status: 400, body: { message: 'A thread has already been created for this message', code: 160004 } };
      // As on Discord, a thread started from a message has the message's id.
      const thread = wire.threadChannel(this.guildId, channelId, String(body['name'] ?? 'thread'), this.bot.id, messageId);
      this.channels.set(thread.id, thread);
      this.gateway.dispatch('THREAD_CREATE', { ...thread, newly_created: true });
      return { status: 201, body: thread };
    }
    return notFound();
  }

  private post(channel: FakeChannel, body: Record<string, unknown>): Reply {
    const nonce = typeof body['nonce'] === 'string' ? body['nonce'] : undefined;
    const earlier = nonce && body['enforce_nonce'] ? this.messagesIn(channel.id).find((entry) => entry.nonce === nonce) : undefined;
    if (earlier) return { status: 200, body: earlier }; // Discord's nonce deduplication
    const content = String(body['content'] ?? '');
    const invalid = invalidBody(body);
    if (invalid) return invalid;
    const created = wire.message(channel, this.bot, content);
    Object.assign(created, { embeds: body['embeds'] ?? [], components: body['components'] ?? [], flags: body['flags'] ?? 0, ...(nonce ? { nonce } : {}) });
    const reference = body['message_reference'] as { message_id?: string } | undefined;
    if (reference?.message_id) Object.assign(created, { message_reference: { message_id: reference.message_id, channel_id: channel.id }, type: 19 });
    this.store(created);
    this.gateway.dispatch('MESSAGE_CREATE', created); // Discord echoes the bot's own messages
    return { status: 200, body: created };
  }

  private history(channelId: string, query: URLSearchParams): FakeMessage[] {
    const before = query.get('before');
    const limit = Number(query.get('limit') ?? 50);
    const older = this.messagesIn(channelId).filter((entry) => !before || BigInt(entry.id) < BigInt(before));
    return older.slice(-limit).reverse(); // newest first, as Discord returns them
  }
}

/**
 * Discord's limits on a message body, refused as Discord refuses them (400, code 50035): content
 * up to 2,000 characters; up to 10 embeds, each with a title up to 256, a description up to 4,096,
 * up to 25 fields, and 6,000 characters in all.
 */
function invalidBody(body: Record<string, unknown>): Reply | null {
  const refuse = (field: string, message: string): Reply => ({ status: 400, body: { message: 'Invalid Form Body', code: 50035, errors: { [field]: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message }] } } } });
  if (typeof body['content'] === 'string' && body['content'].length > 2000) return refuse('content', 'Must be 2000 or fewer in length.');
  // A bot may set only SUPPRESS_EMBEDS (4) and SUPPRESS_NOTIFICATIONS (4096) on a message it sends.
  if (body['flags'] !== undefined && (typeof body['flags'] !== 'number' || (body['flags'] & ~(4 | 4096)) !== 0)) {
    return { status: 400, body: { message: 'Invalid Form Body', code: 50035, errors: { flags: { _errors: [{ code: 'MESSAGE_FLAGS_INVALID', message: 'Invalid flags' }] } } } };
  }
  const embeds = Array.isArray(body['embeds']) ? (body['embeds'] as Array<Record<string, unknown>>) : [];
  if (embeds.length > 10) return refuse('embeds', 'Must be 10 or fewer in length.');
  let total = 0;
  for (const embed of embeds) {
    const text = (value: unknown) => (typeof value === 'string' ? value.length : 0);
    const fields = Array.isArray(embed['fields']) ? (embed['fields'] as Array<Record<string, unknown>>) : [];
    if (text(embed['title']) > 256) return refuse('embeds.title', 'Must be 256 or fewer in length.');
    if (text(embed['description']) > 4096) return refuse('embeds.description', 'Must be 4096 or fewer in length.');
    if (fields.length > 25) return refuse('embeds.fields', 'Must be 25 or fewer in length.');
    total += text(embed['title']) + text(embed['description']) + fields.reduce((sum, field) => sum + text(field['name']) + text(field['value']), 0)
      + text((embed['footer'] as Record<string, unknown> | undefined)?.['text']) + text((embed['author'] as Record<string, unknown> | undefined)?.['name']);
  }
  if (total > 6000) return refuse('embeds', 'Embed size exceeds maximum size of 6000');
  return null;
}
