// What a chat adapter is, and the roles its files play (CONTRIBUTING.md "Adding a chat adapter").
// An adapter is a folder (src/adapters/<platform>/) whose `index.ts` exports a start function of
// the shape `StartChatAdapter`, and whose role files each export one class named
// `<Platform><Role>` that implements the role's type below: Slack's `inbound.ts` exports
// `SlackInbound implements ChatInbound<SlackListeners>`, Discord's `DiscordInbound implements
// ChatInbound<Client>`. The same file name holds the same kind of thing in every adapter, so a
// reader who knows one adapter knows where to look in the next; test/unit/adapter-shape.test.ts
// checks it.
//
// Start: build the platform's context and the roles from it; subscribe the renderer to the agent's
// events; register the attachment fetcher under the platform's name; register the listening roles
// on the platform (before connecting: events can arrive right after); connect; start the outbox
// sender with the delivery's `deliver`. Stop undoes it: stop receiving, let the
// inbound finish what it took, write what the renderer holds into the outbox, stop the sender.
import type { Config } from '../../config.js';
import type { Agent } from '../../core/agent.js';
import type { AgentEvent } from '../../core/events.js';
import type { Stores } from '../../core/store.js';
import type { Logger } from '../../log.js';
import type { WorkspaceAttachments } from '../../tools/workspace-attachments.js';
import type { ChatStorage } from '../storage/chat-storage.js';
import type { FeedbackListener } from './answer-feedback.js';
import type { Deliver } from './outbox-sender.js';

/** A running chat adapter: all that src/service.ts holds of it. */
export interface ChatAdapter {
  /** The platform's name: in thread addresses, outbox rows and the readiness check ('slack', 'discord'). */
  readonly platform: string;
  /** True while the platform can reach us (the readiness check). */
  connected(): boolean;
  /** Stops receiving, stores what was received, writes pending renders to the outbox, stops the sender. */
  stop(): Promise<void>;
}

/** What service.ts gives every adapter; an adapter's own options extend it. */
export interface ChatAdapterOptions {
  config: Config;
  agent: Agent;
  stores: Stores;
  /** The outbox and feedback tables. */
  storage: ChatStorage;
  log: Logger;
  /** Hears each new 👍 / 👎 on an answer (the metrics counter). */
  onFeedback?: FeedbackListener;
  /** Where shared files are saved and attached files read (absent: files are only named). */
  attachments?: WorkspaceAttachments;
  /** False in a worker process (HIPPO_ROLE=worker): renders and sends, receives nothing. */
  serve?: boolean;
}

/** An adapter's `index.ts` export: connects, and resolves once the adapter is running. */
export type StartChatAdapter<Options extends ChatAdapterOptions, Adapter extends ChatAdapter> = (options: Options) => Promise<Adapter>;

/**
 * A role that listens on the platform. `On` is what it registers its handlers on: Bolt's app and
 * Hippo's Slack routes, discord.js's client. It registers each event once, before connecting.
 */
export interface ChatListener<On> {
  /** Puts this role's handlers on the platform's event source. */
  register(on: On): void;
}

/**
 * `inbound.ts`: people's messages (new, edited, deleted) into agent calls. The message is stored
 * before the platform's acknowledgement (docs/product.md "Using it"); answers go out later
 * through the outbox.
 */
export interface ChatInbound<On> extends ChatListener<On> {
  /** Resolves when every message received so far is handled (stop, and tests). */
  idle(): Promise<void>;
}

/** `interactions.ts`: Hippo's buttons, menus and forms (and, where the platform routes them here, the slash command). */
export type ChatInteractions<On> = ChatListener<On>;

/** `reactions.ts`: 👍 / 👎 on Hippo's answers, recorded as answer feedback (chat/answer-feedback.ts). */
export type ChatReactions<On> = ChatListener<On>;

/** `renderer.ts`: the agent's events of this platform's sessions into outbox items (or terminal output). */
export interface ChatRenderer {
  /** Takes one event, synchronously (the event bus listener); Slack's and Discord's skip other platforms' sessions. */
  handle(event: AgentEvent): void;
}

/** `deliver.ts`: sends the outbox items the renderer stored, one call per item. */
export interface ChatDelivery {
  /** The outbox sender's deliver function for this platform. */
  readonly deliver: Deliver;
}

/** The roles one adapter builds in its start function. */
export interface ChatRoles<On> {
  inbound: ChatInbound<On>;
  interactions: ChatInteractions<On>;
  reactions: ChatReactions<On>;
  renderer: ChatRenderer;
  delivery: ChatDelivery;
}

/** Registers the listening roles on the platform, in one order for every adapter. */
export function registerRoles<On>(roles: Pick<ChatRoles<On>, 'inbound' | 'interactions' | 'reactions'>, on: On): void {
  roles.inbound.register(on);
  roles.interactions.register(on);
  roles.reactions.register(on);
}
