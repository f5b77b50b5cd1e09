// Slack's App Home tab as a memory browser (docs/product.md "Review memory"): when a person opens it,
// Hippo publishes the memory spaces of the conversations they are a member of (checked with
// conversations.members, cached briefly), each with 🔎 Search and 📦 Export buttons
// (app-home-search.ts, app-home-export.ts) and its documents with the same ⋯ menu as in a thread.
// Within Block Kit's 100 blocks: what does not fit is named, never dropped silently.
import { z } from 'zod';
import type { DocumentSummary, MemorySpaceRecord } from '../../../core/store.js';
import { button, section, type Json } from '../message-views.js';
import { documentRow } from '../memory-views.js';
import { workspaceOf, type SlackContext } from '../context.js';

const appHomeOpened = z.looseObject({ type: z.literal('app_home_opened'), user: z.string(), tab: z.string().optional() });

/** Spaces looked at per publish (each may cost a membership look-up). */
const maxSpaces = 30;
/** Documents shown per space; the rest are named. */
const rowsPerSpace = 8;
/** Blocks of a home view (Slack allows 100). */
const maxBlocks = 100;

/** Action ids of the home's per-space buttons; their value is a HomeSpaceRef. */
export const homeActionIds = { search: 'hippo_home_search', export: 'hippo_home_export' } as const;

/** Which space a home button acts on (its value, JSON). */
export const homeSpaceRef = z.object({ s: z.string().min(1) });

/** True for the home's Search and Export buttons. */
export function isHomeAction(actionId: string): boolean {
  return actionId === homeActionIds.search || actionId === homeActionIds.export;
}

/** Handles app_home_opened: publishes the person's memory spaces (after the event is acknowledged). */
export function handleAppHomeOpened(context: SlackContext, teamId: string, raw: unknown): void {
  const event = appHomeOpened.safeParse(raw);
  if (!event.success || (event.data.tab !== undefined && event.data.tab !== 'home')) return;
  const userId = event.data.user;
  context.background.run('slack-app-home', () => publishHome(context, teamId, userId), { userId });
}

/** Builds and publishes the home view of one person. */
export async function publishHome(context: SlackContext, teamId: string, userId: string): Promise<void> {
  const { client } = await workspaceOf(context, teamId);
  // Someone who may not use Hippo (ALLOWED_USERS) sees why, and no memory.
  const access = await context.access.maySteer(context.people.requester(teamId, userId));
  if (!access.allowed) {
    await client.apiCall('views.publish', { user_id: userId, view: { type: 'home', blocks: [section(access.message)] } });
    return;
  }
  const spaces = await context.stores.spaces.list('slack', teamId);
  const visible: Array<{ space: MemorySpaceRecord; entries: DocumentSummary[] }> = [];
  for (const space of spaces.slice(0, maxSpaces)) {
    // From App Home no channel is at hand: membership of the space's conversation decides.
    const decision = await context.memory.check(space, 'view', { platform: 'slack', workspaceId: teamId, channelId: null, userId });
    if (decision.allowed) visible.push({ space, entries: await context.stores.documents.spaceDocuments(space.id) });
  }
  const view = { type: 'home', blocks: homeBlocks(visible, spaces.length > maxSpaces ? spaces.length - maxSpaces : 0) };
  await client.apiCall('views.publish', { user_id: userId, view });
  context.log.info({ userId, spaces: visible.length }, 'slack-app-home-published');
}

/** The home view's blocks: a header, then per space its name and document rows. */
export function homeBlocks(spaces: ReadonlyArray<{ space: MemorySpaceRecord; entries: readonly DocumentSummary[] }>, unchecked = 0): Json[] {
  const blocks: Json[] = [
    { type: 'header', text: { type: 'plain_text', text: '🧠 Hippo memory', emoji: true } },
    section("The memory of the conversations you are in. *🔎 Search* finds words in a memory's documents and past conversations (any language); *📦 Export as zip* sends you its documents with their history, in your messages with Hippo. ⋯ on a document: View, History, Edit, Undo last change, Pin a line. In a thread, `@hippo memory` shows the same."),
  ];
  if (spaces.length === 0) blocks.push(section('_No memory yet in any conversation you are part of._'));
  let shownSpaces = 0;
  for (const { space, entries } of spaces) {
    const rows = entries.slice(0, rowsPerSpace);
    const more = entries.length - rows.length;
    const needed = 3 + rows.length + (more > 0 ? 1 : 0);
    // Room for this space and the closing note.
    if (blocks.length + needed > maxBlocks - 1) break;
    const ref = JSON.stringify({ s: space.id } satisfies z.infer<typeof homeSpaceRef>);
    blocks.push({ type: 'divider' }, section(`*${spaceName(space)}*`), {
      type: 'actions', elements: [button('🔎 Search', homeActionIds.search, ref), button('📦 Export as zip', homeActionIds.export, ref)],
    });
    for (const entry of rows) blocks.push(documentRow(entry, { c: null, t: null }));
    if (more > 0) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `${more} more document${more === 1 ? '' : 's'}: say \`@hippo memory\` in that conversation to see them all.` }] });
    shownSpaces += 1;
  }
  const left = spaces.length - shownSpaces + unchecked;
  if (left > 0) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `${left} more memory space${left === 1 ? '' : 's'} not shown here: say \`@hippo memory\` in their conversations.` }] });
  return blocks;
}

/**
 * The space a person acts on from App Home when they may view it (ALLOWED_USERS, then membership
 * of its conversation), else the words of the refusal.
 */
export async function homeSpace(context: SlackContext, teamId: string, userId: string, spaceId: string): Promise<MemorySpaceRecord | string> {
  const steer = await context.access.maySteer(context.people.requester(teamId, userId));
  if (!steer.allowed) return steer.message;
  const space = await context.stores.spaces.get(spaceId);
  if (!space) return 'This memory space no longer exists.';
  // From App Home no channel is at hand: membership of the space's conversation decides.
  const decision = await context.memory.check(space, 'view', { platform: 'slack', workspaceId: teamId, channelId: null, userId });
  if (decision.allowed) return space;
  context.log.info({ userId, spaceId }, 'slack-memory-refused');
  return decision.reason;
}

/** How a space is named (mrkdwn): its channel, a DM, or the whole workspace. */
export function spaceName(space: MemorySpaceRecord): string {
  if (space.channelId === null) return 'Workspace memory (shared by public channels)';
  if (space.channelId.startsWith('D')) return 'Your direct messages with Hippo';
  return `<#${space.channelId}>`;
}
