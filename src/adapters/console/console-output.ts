// What the terminal chat writes, in one place so lines never tear each other: whole lines
// (notes, tool calls, log notices), the streamed answer, and a status while the agent works.
// On a terminal the status lives in the input prompt ("⠹ thinking 4s › "), redrawn every second
// with whatever the person is typing kept intact; elsewhere (pipes, tests) it is a plain line.
import { clearLine, cursorTo, type Interface } from 'node:readline';

export interface ConsoleOutputOptions {
  output: NodeJS.WritableStream;
  /** A terminal: prompt with line editing and a live status (default false: plain lines). */
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
  private streaming = false;
  private status: { label: string; since: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticks = 0;
  private prompt: Interface | undefined;

  constructor(private readonly options: ConsoleOutputOptions) {
    this.output = options.output;
    this.now = options.now ?? (() => performance.now());
  }

  get terminal(): boolean {
    return this.options.terminal;
  }

  /** The stream written to (readline echoes the input line there on a terminal). */
  get writable(): NodeJS.WritableStream {
    return this.output;
  }

  /** On a terminal: the readline interface whose prompt carries the status. */
  attachPrompt(prompt: Interface): void {
    this.prompt = prompt;
    prompt.setPrompt(idlePrompt);
    prompt.prompt(true);
  }

  detachPrompt(): void {
    this.prompt = undefined;
  }

  /** Writes a whole line (ends the streamed answer first). */
  line(text: string): void {
    this.endStream();
    this.clearPromptLine();
    this.output.write(`${text}\n`);
    this.redrawPrompt();
  }

  /** Appends streamed answer text, opening the answer with "hippo> ". */
  stream(delta: string): void {
    this.setStatus(undefined);
    if (!this.streaming) {
      this.clearPromptLine();
      this.output.write('hippo> ');
      this.streaming = true;
    }
    this.output.write(delta);
  }

  /** Ends the streamed answer's line, if one is open. */
  endStream(): void {
    if (!this.streaming) return;
    this.streaming = false;
    this.output.write('\n');
    this.redrawPrompt();
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

  /** Stops the status timer. */
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

  private clearPromptLine(): void {
    if (!this.prompt || this.streaming) return;
    clearLine(this.output, 0);
    cursorTo(this.output, 0);
  }

  private redrawPrompt(): void {
    if (!this.prompt || this.streaming) return;
    this.prompt.setPrompt(this.promptText());
    // `true` keeps the cursor where the person is typing.
    this.prompt.prompt(true);
  }
}
