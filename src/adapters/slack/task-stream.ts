// A run's task stream as outbox items (renderer.ts renders the rest of a run): the first tool call
// starts one native stream per run (chat.startStream with `task_update` chunks, opening with what
// the model said before it), later calls and what the model says between them are appended, and
// the run's end stops it unless its answer already did (stream-delivery.ts `tasks-answer`).
import type { AgentEvent } from '../../core/events.js';
import type { SessionRecord } from '../../core/store.js';
import type { OutboxEntry } from '../chat/outbox.js';
import type { Json } from './message-views.js';
import { slackMarkdown } from './slack-text.js';
import { streamOperations } from './stream-delivery.js';
import { eventChunks, type TaskDisplayMode } from './task-cards.js';

/** What a run's card knows of its task stream. */
export interface RunTasks {
  /** The run's card key: the task stream's key derives from it. */
  key: string;
  /** The run's task stream was started. */
  tasks: boolean;
  /** What the model said before the run's first tool call, unstreamed: the task stream opens with it. */
  said: string;
}

/** What the task stream needs of the renderer. */
export interface TaskStreamHost {
  enqueue(entry: OutboxEntry): Promise<unknown>;
  entry(session: SessionRecord, key: string, operation: string, payload: { [key: string]: Json }, extra?: Partial<OutboxEntry>): OutboxEntry;
  /** Whom the session's stream is for (Slack wants a recipient outside DMs). */
  recipient(sessionId: string): string | undefined;
  /** How Slack lays out the cards (SLACK_TASK_DISPLAY). */
  display: TaskDisplayMode;
  /** Most characters of what the model says between calls. */
  saidChars: number;
}

/** The outbox key of a run's task stream (its answer targets it). */
export function tasksKey(run: RunTasks): string {
  return `tasks:${run.key}`;
}

/**
 * What the model said before tool calls, when it was not streamed: appended to the run's task
 * stream, or kept to open it (the first call's cards follow it).
 */
export async function saidInTasks(host: TaskStreamHost, run: RunTasks, event: Extract<AgentEvent, { type: 'assistant-message' }>): Promise<void> {
  const content = event.message.content;
  if ((event.message.tool_calls?.length ?? 0) === 0 || typeof content !== 'string' || content.trim() === '') return;
  const text = content.slice(0, host.saidChars);
  if (!run.tasks) {
    run.said = text;
    return;
  }
  const key = tasksKey(run);
  const chunks = [{ type: 'markdown_text', text: slackMarkdown(`\n\n${text}\n\n`) }];
  await host.enqueue(host.entry(event.session, `${key}:say:${event.segmentId}:${event.seq}`, streamOperations.tasksUpdate, { channel: event.session.channelId, chunks }, { targetKey: key }));
}

/**
 * A tool call as a card in the run's task stream (started by its first call); a TODO.md write
 * shows as the plan instead. Where Slack refuses the stream, the status card alone shows the run.
 */
export async function taskCard(host: TaskStreamHost, run: RunTasks, event: Extract<AgentEvent, { type: 'tool-call-start' | 'tool-call-end' }>): Promise<void> {
  const chunks = eventChunks(event);
  if (chunks.length === 0) return;
  const { session, call } = event;
  const key = tasksKey(run);
  if (!run.tasks) {
    run.tasks = true;
    const recipient = host.recipient(session.id);
    const opening = run.said === '' ? [] : [{ type: 'markdown_text', text: slackMarkdown(`${run.said}\n\n`) }];
    run.said = '';
    await host.enqueue(host.entry(session, key, streamOperations.tasksStart, {
      channel: session.channelId, thread_ts: session.threadKey, chunks: [...opening, ...chunks], task_display_mode: host.display,
      ...(recipient ? { recipient_user_id: recipient, recipient_team_id: session.workspaceId } : {}),
    }));
    return;
  }
  const step = event.type === 'tool-call-start' ? 'start' : 'end';
  await host.enqueue(host.entry(session, `${key}:${call.id}:${step}`, streamOperations.tasksUpdate, { channel: session.channelId, chunks }, { targetKey: key }));
}

/** The run ended: its task stream (if any) is stopped. */
export async function stopTasks(host: TaskStreamHost, run: RunTasks, session: SessionRecord): Promise<void> {
  if (!run.tasks) return;
  run.tasks = false;
  const key = tasksKey(run);
  await host.enqueue(host.entry(session, `${key}:stop`, streamOperations.tasksStop, { channel: session.channelId }, { targetKey: key }));
}
