// Slack's AI-app conventions: when someone opens a thread in Hippo's assistant pane
// (assistant_thread_started), a short greeting and suggested prompts; when a session starts in
// such a thread, the thread gets the request as its title (assistant.threads.setTitle). The
// "is thinking…" status is the renderer's (deliver.ts). Someone who may not start sessions in
// direct messages is told so instead of being greeted.
import type { SlackRoutes } from './routes.js';
import { z } from 'zod';
import { eventEnvelope } from './payloads.js';
import { slackPlatform, workspaceOf, type SlackContext } from './context.js';

const threadStarted = z.looseObject({
  assistant_thread: z.looseObject({ user_id: z.string(), channel_id: z.string(), thread_ts: z.string() }),
});

/** The greeting in a new assistant thread. */
export const assistantGreeting = `Hi, I'm Hippo. Ask me for something and I'll work on it in this thread; reply while I work to steer me. Say \`help\` for the commands.`;

/** Prompts offered in a new assistant thread (Slack shows up to four). */
export const suggestedPrompts = [
  { title: 'Summarise a thread', message: 'Summarise this thread for me: <paste a link to the thread>' },
  { title: 'Plan a task', message: 'Help me plan this task step by step: ' },
  { title: 'Explain something', message: 'Explain this to me like a new colleague: ' },
  { title: 'What do you remember?', message: 'memory' },
];

/** Registers the assistant pane handlers. */
export function registerAssistantPane(routes: SlackRoutes, context: SlackContext): void {
  routes.event('assistant_thread_started', async ({ event, body }) => {
    const envelope = eventEnvelope.safeParse(body);
    const parsed = threadStarted.safeParse(event);
    if (!envelope.success || !parsed.success) return;
    const teamId = envelope.data.team_id;
    const { user_id: userId, channel_id: channelId, thread_ts: threadTs } = parsed.data.assistant_thread;
    const decision = await context.access.mayStart(context.people.requester(teamId, userId), { channelId, direct: true });
    // Stored through the outbox (a retried event posts nothing twice); the prompts are a courtesy.
    await context.outbox.enqueue({
      idempotencyKey: `assistant-greeting:${teamId}:${channelId}:${threadTs}`,
      sessionId: null,
      platform: slackPlatform,
      operation: 'post',
      payload: { team: teamId, channel: channelId, thread_ts: threadTs, markdown: decision.allowed ? assistantGreeting : decision.message },
    });
    if (!decision.allowed) return;
    context.background.run('slack-suggested-prompts', async () => {
      const { client } = await workspaceOf(context, teamId);
      await client.apiCall('assistant.threads.setSuggestedPrompts', { channel_id: channelId, thread_ts: threadTs, title: 'Try asking', prompts: suggestedPrompts });
    }, { teamId });
  });
}

/**
 * Names an assistant thread after the request that started its session. Only assistant threads
 * have titles; elsewhere Slack refuses, which is fine (logged at debug level).
 */
export function setThreadTitle(context: SlackContext, teamId: string, channelId: string, threadTs: string, request: string): void {
  context.background.run('slack-thread-title', async () => {
    const title = request.split('\n').find((line) => line.trim() !== '')?.trim().slice(0, 80) ?? 'Hippo';
    try {
      const { client } = await workspaceOf(context, teamId);
      await client.apiCall('assistant.threads.setTitle', { channel_id: channelId, thread_ts: threadTs, title });
    } catch (error) {
      context.log.debug({ teamId, channelId, err: error instanceof Error ? error.message : String(error) }, 'slack-thread-title-not-set');
    }
  });
}
