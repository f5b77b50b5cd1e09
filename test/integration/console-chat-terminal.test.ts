// The terminal chat in terminal mode (line editing, history, a live status in the prompt), driven
// through streams the way a terminal would drive it: keystrokes in, escape sequences out.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runConsoleChat } from '../../src/adapters/console/console-chat.js';
import { ConsoleOutput } from '../../src/adapters/console/console-output.js';
import { lastMessageText } from '../fakes/fake-model-server.js';
import { newThread } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';
import { until } from '../support/wait.js';

const bed = useTestBed();

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
});
