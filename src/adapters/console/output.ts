// What the terminal chat writes, in one place so input and output never overwrite each other:
// whole lines (notes, tool calls, log notices), Markdown (answers, command replies) and a status
// while the agent works. On a terminal the status lives in the input prompt ("⠹ thinking 4s › "),
// redrawn every second with whatever the person is typing kept intact. While an answer streams the
// prompt is taken off the screen and readline's echo is held back (what is typed still goes into
// its line); when the answer ends the prompt comes back below it with the typed text. Elsewhere
// (pipes, tests) everything is plain lines. Every text passes `terminalSafe` on its way out.
import { Writable } from 'node:stream';
import { clearScreenDown, cursorTo, moveCursor, type Interface } from 'node:readline';
import { ansiStyles, plainStyles, renderMarkdown, terminalSafe, TerminalMarkdown } from './terminal-markdown.js';

export interface ConsoleOutputOptions {
  output: NodeJS.WritableStream;
  /** A terminal: prompt with line editing, a live status and styled Markdown (default false: plain lines). */
  terminal: boolean;
  /** Milliseconds since some fixed point (default performance.now). */
  now?: () => number;
  /** Status redraw interval on a terminal, in milliseconds (default 1,000). */
  tickMs?: number;
}

const idlePrompt = '› ';
const spinner = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** The terminal chat's output. */
export class ConsoleOutput {
  private readonly output: NodeJS.WritableStream;
  private readonly now: () => number;
  private readonly markdown: TerminalMarkdown;
  /** An answer is streaming: the prompt is off the screen until it ends. */
  private streaming = false;
  /** The streamed answer's last character was a line end (a note can follow without one). */
  private atLineStart = true;
  private status: { label: string; since: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  private prompt: Interface | undefined;
  /** The prompt (with the typed text) is on the screen. */
  private promptShown = false;
  /** Readline's writes pass to the screen only while the prompt is shown. */
  private readonly echo: Writable;

  constructor(private readonly options: ConsoleOutputOptions) {
    this.output = options.output;
    this.now = options.now ?? (() => performance.now());
    this.markdown = new TerminalMarkdown(options.terminal ? ansiStyles : plainStyles);
    const screen = this.output as NodeJS.WritableStream & { columns?: number };
    this.echo = new Writable({
      write: (chunk: Buffer | string, _encoding, done) => {
        if (this.promptShown) this.output.write(chunk);
        done();
      },
    });
    // readline wraps the typed line at the terminal's width.
    Object.defineProperty(this.echo, 'columns', { get: () => screen.columns ?? 80 });
  }

  get terminal(): boolean {
    return this.options.terminal;
  }

  /** The stream readline writes its prompt and echo to (on a terminal). */
  get readlineOutput(): NodeJS.WritableStream {
    return this.echo;
  }

  /** On a terminal: the readline interface whose prompt carries the status. */
  attachPrompt(prompt: Interface): void {
    this.prompt = prompt;
    prompt.setPrompt(idlePrompt);
    this.showPrompt();
  }

  detachPrompt(): void {
    this.hidePrompt();
    this.prompt = undefined;
  }

  /** Writes a whole line as it is (control characters replaced). */
  line(text: string): void {
    this.write(`${terminalSafe(text)}\n`);
  }

  /** Writes Markdown (a command's reply, a document): styled on a terminal, plain text elsewhere; each line indented by `indent` spaces. */
  markdownLine(text: string, indent = 0): void {
    const rendered = renderMarkdown(text, this.options.terminal ? ansiStyles : plainStyles).replace(/\n$/, '');
    const margin = ' '.repeat(indent);
    this.write(`${rendered.split('\n').map((line) => margin + line).join('\n')}\n`);
  }

  /** The person sent a line: shown again if it was typed while an answer streamed (no echo then). */
  submitted(text: string): void {
    if (this.prompt && this.streaming) this.line(`${idlePrompt}${text}`);
  }

  /** Appends streamed answer text (Markdown), opening the answer with "hippo> ". */
  stream(delta: string): void {
    this.setStatus(undefined);
    if (!this.streaming) {
      this.hidePrompt();
      this.output.write('hippo> ');
      this.streaming = true;
      this.atLineStart = false;
    }
    const text = this.markdown.write(delta);
    if (text === '') return;
    this.output.write(text);
    this.atLineStart = text.endsWith('\n');
  }

  /** Ends the streamed answer's line, if one is open, and brings the prompt back. */
  endStream(): void {
    if (!this.streaming) return;
    const rest = this.markdown.end();
    this.output.write(rest);
    if (rest !== '') this.atLineStart = rest.endsWith('\n');
    if (!this.atLineStart) this.output.write('\n');
    this.streaming = false;
    this.atLineStart = true;
    this.showPrompt();
  }

  /**
   * Shows what the agent waits for ("thinking", "running web_fetch") with the time since it began,
   * or nothing (undefined). The same label again keeps its start time.
   */
  setStatus(label: string | undefined): void {
    if (label === this.status?.label) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.status = label === undefined ? undefined : { label, since: this.now() };
    if (!this.options.terminal) {
      // Plain output: one line when the agent starts thinking; tool lines speak for themselves.
      if (label === 'thinking') this.line('  … thinking');
      return;
    }
    if (label !== undefined) {
      this.timer = setInterval(() => this.redrawPrompt(), this.options.tickMs ?? 1_000);
      this.timer.unref();
    }
    this.redrawPrompt();
  }

  /** Stops the status timer and ends an open answer. */
  close(): void {
    this.setStatus(undefined);
    this.endStream();
  }

  /** The prompt as it would be drawn now (exposed for tests). */
  promptText(): string {
    if (!this.status) return idlePrompt;
    this.ticks += 1;
    const seconds = Math.floor((this.now() - this.status.since) / 1000);
    return `${spinner[this.ticks % spinner.length] ?? '·'} ${this.status.label} ${seconds}s ${idlePrompt}`;
  }

  /** Writes finished lines: during an answer between its lines, else above the prompt. */
  private write(text: string): void {
    if (this.streaming) {
      // A note during an answer: on a line of its own; the answer goes on below it.
      if (!this.atLineStart) this.output.write('\n');
      this.output.write(text);
      this.atLineStart = true;
      return;
    }
    this.hidePrompt();
    this.output.write(text);
    this.showPrompt();
  }

  /** Takes the prompt and the typed text off the screen; readline's echo waits. */
  private hidePrompt(): void {
    if (!this.prompt || !this.promptShown) return;
    // From the cursor (somewhere in the typed text) back to where the prompt begins.
    moveCursor(this.output, 0, -this.prompt.getCursorPos().rows);
    cursorTo(this.output, 0);
    clearScreenDown(this.output);
    this.promptShown = false;
  }

  /** Draws the prompt and what the person has typed so far, below what was written. */
  private showPrompt(): void {
    // An answer streaming (one resumed at start-up may begin before the prompt exists) keeps its line until it ends.
    if (!this.prompt || this.streaming) return;
    // readline redraws from as many rows above as it last drew its cursor below the prompt's start
    // (its `prevRows`, which a pasted line leaves behind the cursor): give it blank rows to climb,
    // so it never erases what was written above.
    const rows = (this.prompt as Interface & { prevRows?: number }).prevRows ?? this.prompt.getCursorPos().rows;
    if (rows > 0) this.output.write('\n'.repeat(rows));
    this.promptShown = true;
    this.prompt.setPrompt(this.promptText());
    // `true` keeps the cursor where the person is typing.
    this.prompt.prompt(true);
  }

  private redrawPrompt(): void {
    if (!this.prompt || this.streaming || !this.promptShown) return;
    this.prompt.setPrompt(this.promptText());
    this.prompt.prompt(true);
  }
}
