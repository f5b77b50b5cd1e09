// How Discord things are named in Hippo: thread addresses of sessions, steer keys of messages,
// custom ids of buttons, thread names, and the bot mention in message text. Pure functions.
import type { ThreadAddress, Visibility } from '../../core/store.js';

/**
 * The session address of a guild thread: workspace = guild, channel = the thread's parent;
 * private when not everyone in the guild can read it (a private thread, or a hidden channel).
 */
export function threadAddress(guildId: string, parentId: string, threadId: string, visibility: Visibility = 'public'): ThreadAddress {
  return { platform: 'discord', workspaceId: guildId, channelId: parentId, threadKey: threadId, visibility };
}

/** The session address of a DM channel (workspace "@me"): a memory space of its own. */
export function dmAddress(channelId: string): ThreadAddress {
  return { platform: 'discord', workspaceId: '@me', channelId, threadKey: channelId, visibility: 'direct' };
}

/** The steer key of a message: "discord:<channelId>:<messageId>". */
export function steerKey(channelId: string, messageId: string): string {
  return `discord:${channelId}:${messageId}`;
}

/** The channel and message of a Discord steer key, or null for other platforms' keys. */
export function parseSteerKey(key: string): { channelId: string; messageId: string } | null {
  const match = /^discord:(\d+):(\d+)$/.exec(key);
  return match?.[1] && match[2] ? { channelId: match[1], messageId: match[2] } : null;
}

/**
 * What a button, menu or modal does (stop: the status card's Stop). The memory browser's ("d…") name a document in the memory run
 * slot: docs (choose a document), dview, dhist (page in `document.index`), dedit, dpart (choose a
 * part), dsave (a part's modal: part index and version), dsaved (a draft's modal: the draft id),
 * dredit (edit again from a draft), dundo / dundook (undo the latest change, confirmed), dpin /
 * dpinsave; nedit: Edit on a memory note. approve / approverun / deny (R23) name the tool approval
 * in the memory run slot.
 */
export type ButtonAction =
  | 'pause' | 'resume' | 'stop' | 'view' | 'revert' | 'review' | 'memory' | 'undo' | 'keep'
  | 'docs' | 'dview' | 'dhist' | 'dedit' | 'dpart' | 'dsave' | 'dsaved' | 'dredit' | 'dundo' | 'dundook' | 'dpin' | 'dpinsave' | 'nedit'
  | 'approve' | 'approverun' | 'deny';

const buttonActions: readonly ButtonAction[] = [
  'pause', 'resume', 'stop', 'view', 'revert', 'review', 'memory', 'undo', 'keep',
  'docs', 'dview', 'dhist', 'dedit', 'dpart', 'dsave', 'dsaved', 'dredit', 'dundo', 'dundook', 'dpin', 'dpinsave', 'nedit',
  'approve', 'approverun', 'deny',
];

/** A parsed button custom id. */
export interface ButtonId {
  action: ButtonAction;
  sessionId: string;
  /** The memory run for view / revert / review / undo / keep. */
  memoryRunId: string | null;
  /** undo / keep: which document of the run (its index by path) and the version the person saw. */
  document: { index: number; version: number } | null;
}

/**
 * "hippo:<action>:<sessionId>[:<memoryRunId>[:<index>.<version>]]" (Discord allows 100
 * characters: two uuids and a short pair fit).
 */
export function buttonId(action: ButtonAction, sessionId: string, memoryRunId?: string, document?: { index: number; version: number }): string {
  const base = memoryRunId ? `hippo:${action}:${sessionId}:${memoryRunId}` : `hippo:${action}:${sessionId}`;
  return document ? `${base}:${document.index}.${document.version}` : base;
}

/** Parses a custom id made by `buttonId`; null for anything else. */
export function parseButtonId(customId: string): ButtonId | null {
  const [prefix, action, sessionId, memoryRunId, documentPart] = customId.split(':');
  const known = buttonActions.find((candidate) => candidate === action);
  if (prefix !== 'hippo' || !known || !sessionId) return null;
  const match = documentPart ? /^(\d{1,4})\.(\d{1,9})$/.exec(documentPart) : null;
  const document = match?.[1] && match[2] ? { index: Number(match[1]), version: Number(match[2]) } : null;
  return { action: known, sessionId, memoryRunId: memoryRunId ?? null, document };
}

/** Discord limits thread names to 100 characters. */
export const threadNameLimit = 100;

/** A thread name from the request: its first line, whitespace collapsed, at most 100 characters. */
export function threadName(request: string): string {
  const line = request.split('\n').map((part) => part.trim()).find((part) => part !== '') ?? '';
  const name = line.replace(/\s+/g, ' ');
  if (name === '') return 'Hippo';
  return name.length <= threadNameLimit ? name : `${name.slice(0, threadNameLimit - 1).trimEnd()}…`;
}

/**
 * Ways a message can address Hippo: its user (`<@id>`, legacy `<@!id>`) and, in a server, its
 * managed role (`<@&roleId>`), which Discord's autocomplete offers next to the user.
 */
export function mentionPattern(userId: string, roleId?: string | null): RegExp {
  return new RegExp(`<@!?${userId}>${roleId ? `|<@&${roleId}>` : ''}`, 'g');
}

/** True when the text mentions Hippo. */
export function mentionsBot(text: string, pattern: RegExp): boolean {
  return new RegExp(pattern.source).test(text);
}

/** The text without mentions of Hippo, trimmed. */
export function stripMention(text: string, pattern: RegExp): string {
  return text.replace(new RegExp(pattern.source, 'g'), ' ').replace(/[ \t]{2,}/g, ' ').trim();
}
