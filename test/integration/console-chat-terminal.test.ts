// The terminal chat in terminal mode (line editing, history, a live status in the prompt), driven
// through streams the way a terminal would drive it: keystrokes in, escape sequences out.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runConsoleChat, type ChatEnd } from '../../src/adapters/console/console-chat.js';
import { ConsoleOutput } from '../../src/adapters/console/console-output.js';
import type { ThreadAddress } from '../../src/core/store.js';
import { lastMessageText } from '../fakes/fake-model-server.js';
import { newThread, type AgentHarness } from '../support/agent-harness.js';
import { unzip } from '../support/unzip.js';
import { screenLines } from '../support/terminal-screen.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';

const bed = useTestBed();

/** The chat on a pair of streams: keys in, what the screen got out. */
function startChat(harness: AgentHarness, options: { terminal: boolean; address?: ThreadAddress; exportDir?: string }): { input: PassThrough; shown: () => string; screen: () => string[]; chat: Promise<ChatEnd>; address: ThreadAddress } {
  const input = new PassThrough();
  const screen = new PassThrough();
  let shown = '';
  screen.on('data', (chunk: Buffer) => void (shown += chunk.toString('utf8')));
  const address = options.address ?? newThread();
  const chat = runConsoleChat({
    agent: harness.agent, stores: harness.stores, events: harness.deps.events, input,
    output: new ConsoleOutput({ output: screen, terminal: options.terminal }),
    address, userName: 'Ada', ...(options.exportDir ? { exportDir: options.exportDir } : {}),
  });
  return { input, shown: () => shown, screen: () => screenLines(shown), chat, address };
}

describe('the terminal chat on a terminal', () => {
  it('recalls earlier lines with the up arrow from its history file, and remembers new ones', async () => {
    const harness = await bed.harness();
    const historyFile = join(await mkdtemp(join(tmpdir(), 'hippo-history-')), 'chat-history');
    await writeFile(historyFile, 'an older question\nwhat was the plan?\n');
    const input = new PassThrough();
    const screen = new PassThrough();
    let shown = '';
    screen.on('data', (chunk: Buffer) => void (shown += chunk.toString('utf8')));
    bed.model.enqueue({ content: 'The plan was to ship.' });
    const chat = runConsoleChat({
      agent: harness.agent, stores: harness.stores, events: harness.deps.events, input,
      output: new ConsoleOutput({ output: screen, terminal: true }),
      address: newThread(), userName: 'Ada', historyFile,
    });
    await until(() => shown.includes('› '), 10_000, 'the prompt');
    input.write('\x1b[A'); // up: the newest history entry
    input.write('\r');
    const request = await bed.model.waitFor((recorded) => recorded.path === '/v1/chat/completions', { timeoutMs: 10_000 });
    expect(lastMessageText(request.body)).toContain('what was the plan?');
    await until(() => shown.includes('The plan was to ship.'), 10_000, 'the answer');
    input.write('\x1b[A\x1b[A\r'); // two up: the older entry, sent as a second message
    const second = await bed.model.waitFor((recorded) => recorded.path === '/v1/chat/completions' && recorded.index > request.index, { timeoutMs: 10_000 });
    expect(lastMessageText(second.body)).toContain('an older question');
    // Oldest first, each line once, the newest last.
    await until(async () => (await readFile(historyFile, 'utf8')) === 'what was the plan?\nan older question\n', 10_000, 'history saved');
    input.write('/quit\r');
    expect(await chat).toBe('quit');
  });

  it('shows what the agent waits for in the prompt, with the time since it began', () => {
    let now = 0;
    const output = new ConsoleOutput({ output: new PassThrough(), terminal: true, now: () => now });
    expect(output.promptText()).toBe('› ');
    output.setStatus('thinking');
    now = 3_400;
    expect(output.promptText()).toMatch(/^\S thinking 3s › $/);
    output.setStatus('thinking'); // the same wait goes on: the clock keeps running
    now = 12_000;
    expect(output.promptText()).toMatch(/^\S thinking 12s › $/);
    output.setStatus('running web_fetch');
    expect(output.promptText()).toMatch(/^\S running web_fetch 0s › $/);
    output.setStatus(undefined);
    expect(output.promptText()).toBe('› ');
    output.close();
  });

  it('prints a plain line instead when the output is not a terminal', () => {
    const screen = new PassThrough();
    let shown = '';
    screen.on('data', (chunk: Buffer) => void (shown += chunk.toString('utf8')));
    const output = new ConsoleOutput({ output: screen, terminal: false });
    output.setStatus('thinking');
    output.setStatus('thinking');
    output.setStatus('running shell');
    output.stream('Hi');
    output.close();
    expect(shown).toBe('  … thinking\nhippo> Hi\n');
  });

  it('keeps what is typed during a streamed answer off its line, and gives it back in the prompt after', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'The **plan** is ready, with three steps to follow.', chunkDelayMs: 80 });
    const { input, shown, screen, chat } = startChat(harness, { terminal: true });
    await until(() => shown().includes('› '), 10_000, 'the prompt');
    input.write('go\r');
    await until(() => shown().includes('hippo> '), 10_000, 'the answer starting');
    input.write('and tes'); // typed while the answer streams
    await until(() => shown().includes('follow.'), 10_000, 'the answer ending');
    await until(() => screen().at(-1) === '› and tes', 10_000, 'the prompt with the typed text');
    const lines = screen();
    // Markdown rendered (no raw markers), the answer whole on its line, the typed text below it.
    expect(lines).toContain('hippo> The plan is ready, with three steps to follow.');
    expect(shown()).toContain('\x1b[1mplan\x1b[22m');
    expect(lines.filter((line) => line.includes('and tes'))).toEqual(['› and tes']);
    input.write('t\r');
    const second = await bed.model.waitFor((request) => request.path === '/v1/chat/completions' && lastMessageText(request.body).includes('and test'), { timeoutMs: 10_000 });
    expect(lastMessageText(second.body)).toContain('and test');
    input.write('/quit\r');
    expect(await chat).toBe('quit');
  });

  it('draws the prompt below an answer that was already streaming when it came (a task resumed at start)', () => {
    const screen = new PassThrough();
    let shown = '';
    screen.on('data', (chunk: Buffer) => void (shown += chunk.toString('utf8')));
    const output = new ConsoleOutput({ output: screen, terminal: true });
    const input = new PassThrough();
    output.stream('Resumed: the first words of the answer');
    const lines = createInterface({ input, output: output.readlineOutput, terminal: true });
    output.attachPrompt(lines);
    input.write('typed');
    output.stream(' and the rest of it.');
    output.endStream();
    expect(screenLines(shown)).toEqual(['hippo> Resumed: the first words of the answer and the rest of it.', '› typed']);
    // A note comes above the prompt; the typed text stays with the prompt, even when it wraps.
    output.line('  a note');
    expect(screenLines(shown)).toEqual(['hippo> Resumed: the first words of the answer and the rest of it.', '  a note', '› typed']);
    const long = ` and ${'more '.repeat(20)}`;
    input.write(long);
    output.line('  a second note, from a tool: \x1b]0;title\x07done');
    expect(screenLines(shown)).toEqual([
      'hippo> Resumed: the first words of the answer and the rest of it.', '  a note', '  a second note, from a tool: \uFFFD]0;title\uFFFDdone',
      `› typed${long}`.slice(0, 80), `› typed${long}`.slice(80).trimEnd(),
    ]);
    output.detachPrompt();
    lines.close();
    output.close();
  });

  it('puts a note that comes during an answer on a line of its own, and keeps a typed line that wraps whole', () => {
    const screen = new PassThrough();
    let shown = '';
    screen.on('data', (chunk: Buffer) => void (shown += chunk.toString('utf8')));
    const output = new ConsoleOutput({ output: screen, terminal: true });
    const input = new PassThrough();
    const lines = createInterface({ input, output: output.readlineOutput, terminal: true });
    output.attachPrompt(lines);
    // Typed key by key past the screen's width (readline then knows its cursor is a row down).
    for (const key of `a question that goes on ${'and on '.repeat(12)}`) input.write(key);
    output.stream('First half of the answer');
    output.line('  ↳ queued, will be read at the next step');
    output.stream(' and the second half.');
    output.endStream();
    output.line('  a note');
    const typed = `› a question that goes on ${'and on '.repeat(12)}`;
    expect(screenLines(shown)).toEqual([
      'hippo> First half of the answer', '  ↳ queued, will be read at the next step', ' and the second half.', '  a note',
      typed.slice(0, 80), typed.slice(80).trimEnd(),
    ]);
    output.detachPrompt();
    lines.close();
    output.close();
  });

  it('replaces control characters of stored text before the terminal (/memory, /history, /search)', async () => {
    const harness = await bed.harness();
    bed.model.enqueue({ content: 'Hello.' });
    const { input, shown, chat, address } = startChat(harness, { terminal: true });
    await until(() => shown().includes('› '), 10_000, 'the prompt');
    input.write('hello\r');
    await until(() => shown().includes('Hello.'), 10_000, 'the answer');
    const session = (await harness.agent.findSession(address))!;
    // A fetched page's escapes: a clipboard write (OSC 52), a title change, a line erasure.
    const hostile = 'pasted \x1b]52;c;cm0gLXJmIH4=\x07 titled \x1b]0;owned\x07 erased \x1b[2K\r done';
    await harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, `# Notes\n- ${hostile}\n`, { kind: 'person', userId: 'U1', name: 'Ada' }, undefined, `reason ${hostile}`);
    for (const command of ['/memory', '/history', '/search pasted']) {
      const before = shown().length;
      input.write(`${command}\r`);
      await until(() => shown().slice(before).includes('done'), 10_000, command);
      const out = shown().slice(before);
      expect(out).not.toMatch(/\x1b\]|\x07|\x1b\[2K/);
      expect(out).toContain('\uFFFD]52;c;cm0gLXJmIH4=\uFFFD titled');
    }
    input.write('/quit\r');
    expect(await chat).toBe('quit');
  });

  it('answers every command the README lists: /pin, /export, /memory search, /memory export', async () => {
    const harness = await bed.harness();
    const exportDir = await mkdtemp(join(tmpdir(), 'hippo-export-'));
    bed.model.enqueue({ content: 'Noted.' });
    const { input, shown, chat, address } = startChat(harness, { terminal: false, exportDir });
    const answerTo = async (command: string, pattern: RegExp) => {
      const before = shown().length;
      input.write(`${command}\n`);
      await until(() => pattern.test(shown().slice(before)), 10_000, command);
      return shown().slice(before);
    };
    input.write('the deploy window is Tuesday\n');
    await until(() => shown().includes('hippo> Noted.'), 10_000, 'the answer');
    const session = (await harness.agent.findSession(address))!;
    await harness.stores.documents.write({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }, '# Team\n- **deploys** on Tuesday\n- standup at 9\n', { kind: 'person', userId: 'U1', name: 'Ada' });

    expect(await answerTo('/pin', /\n$/)).toBe('  Say which line to pin: /pin <text of the line>.\n');
    expect(await answerTo('/pin standup at 9', /Pinned/)).toBe('  📌 Pinned in MAIN.md: “- standup at 9”. Background memory will keep it word for word.\n');
    expect((await harness.stores.documents.read({ spaceId: session.memorySpaceId, sessionKey: '', path: 'MAIN.md' }))?.pinnedLines).toEqual(['- standup at 9']);

    // Searches, instead of printing MAIN.md.
    const search = await answerTo('/memory search tuesday', /Memory matching/);
    expect(search).toMatch(/^ {2}🔎 Memory matching “tuesday”:\n {2}Documents\n {2}• MAIN\.md \(v\d+\): .*Tuesday/);
    expect(search).not.toContain('---');
    expect(search).not.toContain('**');

    const exported = await answerTo('/export', /wrote/);
    const path = /wrote (\S+\.zip): /.exec(exported)?.[1] ?? '';
    expect(path.startsWith(exportDir)).toBe(true);
    expect(exported).toMatch(/^ {2}📦 wrote \S+\.zip: 1 memory document as Markdown with front matter under documents\/, and \d+ versions? under history\/\.\n$/);
    expect(unzip(await readFile(path)).get('documents/MAIN.md')?.data.toString('utf8')).toContain('- standup at 9');
    // A second export does not overwrite the first; a name that exists is refused.
    const again = await answerTo('/memory export', /wrote/);
    expect(again).toContain('-2.zip');
    expect(await answerTo(`/export ${path}`, /\n$/)).toBe(`  could not write ${path}: it exists already: give another name (/export FILE.zip)\n`);
    input.end();
    expect(await chat).toBe('end-of-input');
  });
});
