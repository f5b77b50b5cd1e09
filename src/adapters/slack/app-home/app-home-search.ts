// 🔎 Search on a memory space in App Home (docs/product.md "Review memory"): a modal with a search
// box; each submission searches the space's documents and past conversations (the same search as
// `memory search`, words in any language) and answers in the modal, the box kept for the next
// search. Each submission is checked like a click (ALLOWED_USERS, membership of the space's
// conversation). Within Block Kit's limits: at most 5 hits of each kind, each cut to a section.
import type { ViewResponseAction } from '@slack/bolt';
import type { SlackRoutes } from '../routes.js';
import { z } from 'zod';
import { SearchLimitError } from '../../../core/errors.js';
import type { MemorySpaceRecord } from '../../../core/store.js';
import { quotedWords, searchMemory, searchWordsLimit, type ConversationHit, type MemorySearchResult } from '../../chat/memory-search.js';
import { homeSpace, spaceName } from './app-home.js';
import { slackThreadLink, workspaceOf, type SlackContext } from '../context.js';
import { memoryActionIds, type DocumentRef } from '../memory-views.js';
import { button, escapeMrkdwn, section, type Json } from '../message-views.js';
import { outcomeModal, sectionLimit, type ModalView } from '../modals.js';
import { parseJsonValue, teamOfBody, viewSubmissionBody, type BlockActionBody } from '../payloads.js';

/** The search modal's callback id (its submissions are searches). */
export const homeSearchCallback = 'hippo_home_search';
/** The search box: its block and element ids. */
const wordsInput = 'words';
const searchRef = z.object({ s: z.string().min(1) });
const title = 'Search memory';

/** 🔎 Search clicked in App Home: opens the search modal of the space, or says why not. */
export async function openHomeSearch(context: SlackContext, click: BlockActionBody, teamId: string, spaceId: string): Promise<void> {
  if (!click.trigger_id) return;
  const space = await homeSpace(context, teamId, click.user.id, spaceId);
  const view = typeof space === 'string' ? outcomeModal(space, title) : searchModal(space, '', null);
  await (await workspaceOf(context, teamId)).client.apiCall('views.open', { trigger_id: click.trigger_id, view });
}

/**
 * How long a submission's answer may wait in the acknowledgement: Slack wants it within 3 s, and a
 * search may take up to its statement timeout (5 s). A slower search answers "Searching…" first
 * and puts its results in the modal when they come.
 */
export const searchAckBudgetMs = 2_000;

/** Registers the search modal's submissions on the Bolt app (answered in the acknowledgement, or just after). */
export function registerHomeSearch(routes: SlackRoutes, context: SlackContext): void {
  routes.view(homeSearchCallback, async ({ ack, body }) => {
    const answering = searchSubmission(context, body).catch((error: unknown): SubmissionAnswer => {
      context.log.error({ err: error }, 'slack-home-search-failed');
      return { response_action: 'update', view: outcomeModal('The search failed; try again in a moment.', title) };
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), searchAckBudgetMs)));
    const answer = await Promise.race([answering, late]);
    clearTimeout(timer);
    // Our views are plain JSON built to Block Kit's rules; Bolt wants its own View type for them.
    if (answer) return void (await ack(answer as unknown as ViewResponseAction));
    const parsed = viewSubmissionBody.safeParse(body);
    await ack({ response_action: 'update', view: outcomeModal('🔎 Searching… the results will appear here.', title) } as unknown as ViewResponseAction);
    if (!parsed.success) return;
    const submitted = parsed.data;
    // After the response (the listener returns, then Bolt answers Slack): the results replace it.
    context.background.run('slack-home-search', async () => {
      const final = await answering;
      // Past the acknowledgement a refusal under the box cannot be shown: it becomes the modal's text.
      const view = final.response_action === 'update' ? final.view : outcomeModal(Object.values(final.errors).join(' '), title);
      const { client } = await workspaceOf(context, teamOfBody(submitted));
      await client.apiCall('views.update', { view_id: submitted.view.id, view });
    });
  });
}

type SubmissionAnswer = { response_action: 'update'; view: ModalView } | { response_action: 'errors'; errors: Record<string, string> };

async function searchSubmission(context: SlackContext, raw: unknown): Promise<SubmissionAnswer> {
  const parsed = viewSubmissionBody.safeParse(raw);
  const ref = parsed.success ? parseJsonValue(searchRef, parsed.data.view.private_metadata) : null;
  if (!parsed.success || !ref) return { response_action: 'update', view: outcomeModal('This search could not be read; open it again from the Home tab.', title) };
  const body = parsed.data;
  const teamId = teamOfBody(body);
  const space = await homeSpace(context, teamId, body.user.id, ref.s);
  if (typeof space === 'string') return { response_action: 'update', view: outcomeModal(space, title) };
  const words = (body.view.state.values[wordsInput]?.[wordsInput]?.value ?? '').trim().slice(0, searchWordsLimit);
  if (words === '') return { response_action: 'errors', errors: { [wordsInput]: 'Type the words to look for.' } };
  let result: MemorySearchResult;
  try {
    result = await searchMemory(context.stores, space.id, words, `slack:${body.user.id}`);
  } catch (error) {
    // Too many searches, or one stopped for its time: said under the box, the words kept.
    if (error instanceof SearchLimitError) return { response_action: 'errors', errors: { [wordsInput]: error.message } };
    throw error;
  }
  const { identity } = await workspaceOf(context, teamId);
  const ids = new Map<string, string>();
  for (const hit of result.documents) {
    const document = await context.stores.documents.read({ spaceId: space.id, sessionKey: '', path: hit.path });
    if (document && !document.deleted) ids.set(hit.path, document.id);
  }
  context.log.info({ userId: body.user.id, spaceId: space.id, documents: result.documents.length, conversations: result.conversations.length }, 'slack-home-searched');
  const link = ({ session }: ConversationHit) => (session?.platform === 'slack' ? slackThreadLink(identity, session.channelId, session.threadKey) : null);
  return { response_action: 'update', view: searchModal(space, words, { result, documentIds: ids, link }) };
}

/** What a results view needs besides the hits: document ids (for View) and thread links. */
interface Results {
  result: MemorySearchResult;
  documentIds: ReadonlyMap<string, string>;
  link: (hit: ConversationHit) => string | null;
}

/** The search modal: the space, the search box (holding `words`), and the results when there are any. */
export function searchModal(space: MemorySpaceRecord, words: string, results: Results | null): ModalView {
  const blocks: Json[] = [
    section(`*${spaceName(space)}*: its memory documents and past conversations. Words match in any language; the best matches come first.`),
    {
      type: 'input', block_id: wordsInput, label: { type: 'plain_text', text: 'Words to find' },
      element: {
        type: 'plain_text_input', action_id: wordsInput, max_length: searchWordsLimit,
        placeholder: { type: 'plain_text', text: 'e.g. release plan' }, ...(words ? { initial_value: words } : {}),
      },
    },
  ];
  if (results) blocks.push({ type: 'divider' }, ...resultBlocks(results));
  return {
    type: 'modal', callback_id: homeSearchCallback, title: { type: 'plain_text', text: title },
    submit: { type: 'plain_text', text: 'Search' }, close: { type: 'plain_text', text: 'Close' },
    private_metadata: JSON.stringify({ s: space.id } satisfies z.infer<typeof searchRef>), blocks,
  };
}

/** The hits as blocks: documents with a View button, conversations with a link to their thread. */
function resultBlocks({ result, documentIds, link }: Results): Json[] {
  const quoted = escapeMrkdwn(quotedWords(result.words));
  if (result.documents.length === 0 && result.conversations.length === 0) return [section(`🔎 Nothing in this memory matches ${quoted}.`)];
  const blocks: Json[] = [];
  if (result.documents.length > 0) blocks.push(section(`*📄 Documents matching ${quoted}*`));
  for (const hit of result.documents) {
    const block = section(cut(`*${escapeMrkdwn(hit.path)}* (v${hit.version})\n${snippetText(hit.snippet)}`)) as { [key: string]: Json };
    const documentId = documentIds.get(hit.path);
    if (documentId) block['accessory'] = button('View', memoryActionIds.menu, JSON.stringify({ a: 'view', d: documentId, c: null, t: null } satisfies DocumentRef));
    blocks.push(block);
  }
  if (result.conversations.length > 0) blocks.push(section(`*💬 Conversations matching ${quoted}*`));
  for (const hit of result.conversations) {
    const name = `“${linkText(hit.session?.title ?? 'a conversation')}”`;
    const url = link(hit);
    const where = url ? `<${url}|${name}>` : name;
    blocks.push(section(cut(`${where} · ${escapeMrkdwn(hit.hit.role)}, context ${hit.hit.segmentOrdinal}\n${snippetText(hit.hit.snippet)}`)));
  }
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: 'At most 5 matches of each kind. In a thread: `@hippo memory search &lt;words&gt;`.' }] });
  return blocks;
}

/** A search snippet (matches in **bold**) as mrkdwn: its text escaped, the matches in *bold*. */
function snippetText(snippet: string): string {
  return escapeMrkdwn(snippet).replace(/\*\*(.+?)\*\*/g, '*$1*');
}

/** Text inside a mrkdwn link: escaped, without the "|" that would end it. */
function linkText(text: string): string {
  return escapeMrkdwn(text.slice(0, 150)).replace(/\|/g, '¦');
}

function cut(text: string): string {
  return text.length <= sectionLimit ? text : `${text.slice(0, sectionLimit - 1)}…`;
}
