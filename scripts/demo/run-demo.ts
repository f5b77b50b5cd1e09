// The demo's run: the real service (`src/main.ts` as `npm start` runs it, embedded database in a
// temporary DATA_DIR unless a DATABASE_URL is given) against the project's fake Slack and a local
// fake model, and a few scripted people: Ada asks for release notes (a status card, task cards,
// a streamed answer), Ben steers while it works, Ada asks the memory to remember a fact (a memory
// note with its buttons), and Ada opens Hippo's App Home. No account and no network: everything
// listens on 127.0.0.1. What Slack received is returned for demo-account.ts to show.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeModelServer } from '../../test/fakes/fake-model-server.js';
import { signedHeaders, startFakeSlackApi, type FakeSlackApi, type FakeSlackMessage, type SlackCall } from '../../test/fakes/fake-slack-api.js';
import { conversation, scriptRoles } from '../../test/support/model-script.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const signingSecret = 'demo-signing-secret';
const channel = 'C0DEMO';
const root = '1765100000.000100';

/** Something a person did, placed among Slack's calls (`at`: how many calls Slack had seen). */
export interface PersonStep {
  at: number;
  who: string;
  what: string;
}

/** What Slack saw: every Web API call, the thread's final messages, and the people's steps. */
export interface DemoRecording {
  calls: SlackCall[];
  thread: FakeSlackMessage[];
  people: PersonStep[];
  channel: string;
  root: string;
}

export interface DemoOptions {
  /** A Postgres to use instead of the embedded database (tests pass theirs). */
  databaseUrl?: string;
  /** Progress lines ("starting the service …"). */
  progress?: (line: string) => void;
  /** Longest wait for each step, in milliseconds (default 90,000: the embedded database starts slowly). */
  stepTimeoutMs?: number;
}

/** Runs the scripted conversation and returns what Slack received. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoRecording> {
  const progress = options.progress ?? (() => undefined);
  const timeout = options.stepTimeoutMs ?? 90_000;
  const dataDir = await mkdtemp(join(tmpdir(), 'hippo-demo-'));
  const slack = await startFakeSlackApi({ threadStatusError: null });
  const model = await startFakeModelServer();
  slack.addUser({ id: 'UADA', displayName: 'Ada' });
  slack.addUser({ id: 'UBEN', displayName: 'Ben' });
  scriptModel(model);
  const people: PersonStep[] = [];
  let service: ChildProcess | undefined;
  try {
    progress('starting the service (Slack and the model are local fakes) …');
    const started = await startService({
      SLACK_BOT_TOKEN: 'xoxb-demo', SLACK_SIGNING_SECRET: signingSecret, SLACK_API_URL: slack.apiUrl,
      OPENAI_API_KEY: 'demo-key', OPENAI_BASE_URL: model.url, MODEL: 'demo-model', MODEL_CONTEXT_WINDOW: '200000',
      TOOLS: 'memory,workspace', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info',
      ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    }, timeout);
    service = started.child;
    const say = async (who: string, what: string, event: Record<string, unknown>) => {
      people.push({ at: slack.calls.length, who, what });
      await post(started.port, slack, event);
    };

    progress('Ada mentions @hippo in #releases …');
    await say('Ada', '@hippo draft the release notes for v2.0', { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> draft the release notes for v2.0`, ts: root, channel, event_ts: root });
    await model.waitFor((request) => request.rawBody.includes('draft the release notes'), { timeoutMs: timeout });
    progress('Ben steers in the thread while Hippo works …');
    await say('Ben', 'please mention the new memory export command', { type: 'message', user: 'UBEN', text: 'please mention the new memory export command', ts: '1765100000.000200', thread_ts: root, channel, event_ts: '1765100000.000200' });
    await until(() => threadText(slack).includes('memory export'), timeout, 'the streamed answer');
    await until(() => slack.callsTo('chat.stopStream').length > 0, timeout, 'the end of the answer');

    progress('Ada asks the memory to remember a fact …');
    await say('Ada', '@hippo remember releases ship on Tuesdays', { type: 'app_mention', user: 'UADA', text: `<@${slack.botUserId}> remember releases ship on Tuesdays`, ts: '1765100000.000300', thread_ts: root, channel, event_ts: '1765100000.000300' });
    await until(() => slack.threadMessages(channel, root).some((message) => JSON.stringify(message.blocks ?? '').includes('Revert')), timeout, 'the memory note');

    progress("Ada opens Hippo's App Home …");
    const before = slack.callsTo('views.publish').length;
    await say('Ada', "opens Hippo's App Home", { type: 'app_home_opened', user: 'UADA', channel: 'DUADA', tab: 'home', event_ts: '1765100000.000400' });
    await until(() => slack.callsTo('views.publish').length > before, timeout, 'App Home');
    return { calls: [...slack.calls], thread: slack.threadMessages(channel, root), people, channel, root };
  } finally {
    if (service && service.exitCode === null) {
      const exited = new Promise((resolve) => service?.once('exit', resolve));
      service.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000))]);
      if (service.exitCode === null) service.kill('SIGKILL');
    }
    await slack.close();
    await model.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The worker plans, writes a file and answers (reading Ben's steer); the summarizer notes what Ada asked. */
function scriptModel(model: Awaited<ReturnType<typeof startFakeModelServer>>): void {
  let asked = false;
  scriptRoles(model, {
    worker: (body) => {
      const text = JSON.stringify(conversation(body));
      if (!text.includes('draft the release notes')) return { content: 'ok' };
      if (!asked) {
        asked = true;
        // Slow enough for Ben's reply to arrive while the tools run.
        return {
          delayMs: 1_500,
          content: '', // nothing said before the tools (the script's default would say "ok" into the task stream)
          toolCalls: [
            { id: 'plan', name: 'todo_write', arguments: { content: '# Release notes v2.0\n- [x] collect the merged changes\n- [ ] draft the notes\n' } },
            { id: 'notes', name: 'write_file', arguments: { path: 'release-notes.md', content: '# v2.0\n- Memory export as a zip\n- Terminal chat: Markdown\n' } },
          ],
        };
      }
      return {
        chunkDelayMs: 90,
        content: [
          '## Release notes v2.0',
          '',
          '- **Memory export**: `memory export` sends the memory as a zip, with every version.',
          '- **Terminal chat**: answers render as Markdown; `/pin` and `/export` work there too.',
          '- **Safe text**: Q&A, <b>tags</b> and `<!here>` in an answer stay text (no ping, no markup).',
          '',
          'I saved them as `release-notes.md` (attached to the run). Ben: the memory export command is in the first line.',
        ].join('\n'),
      };
    },
    summarizer: (body) => JSON.stringify(body).includes('releases ship on Tuesdays')
      ? {
        toolCalls: [
          { id: 'append', name: 'memory_append', arguments: { path: 'MAIN.md', text: '- Releases ship on Tuesdays (Ada asked).' } },
          { id: 'done', name: 'memory_done', arguments: { note: 'Noted that releases ship on Tuesdays.' } },
        ],
      }
      : { content: 'no change' },
  });
}

/** Starts `src/main.ts` as `npm start` does and waits for its `service-started` log line. */
async function startService(env: Record<string, string>, timeoutMs: number): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--max-old-space-size=1536', '--import', 'tsx', 'src/main.ts', '--no-env-file'], {
    cwd: repoRoot, env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? tmpdir(), ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => void (stderr += chunk));
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`the service did not start within ${timeoutMs} ms\n${stderr}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? 'signal'}) before it started\n${stderr}`));
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.includes('"service-started')) continue;
        clearTimeout(timer);
        resolve({ child, port: Number((JSON.parse(line) as { port?: number }).port) });
      }
    });
  });
}

/** Sends one signed Events API callback, as Slack would. */
async function post(port: number, slack: FakeSlackApi, event: Record<string, unknown>): Promise<void> {
  const body = JSON.stringify({ team_id: slack.teamId, type: 'event_callback', event_id: `Ev${String(event['event_ts']).replace('.', '')}`, event });
  const response = await fetch(`http://127.0.0.1:${port}/slack/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...signedHeaders(signingSecret, body) }, body });
  if (response.status !== 200) throw new Error(`the service answered HTTP ${response.status} to a Slack event`);
}

function threadText(slack: FakeSlackApi): string {
  return slack.threadMessages(channel, root).map((message) => `${message.markdown_text ?? ''} ${message.text ?? ''}`).join('\n');
}

async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`the demo waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
