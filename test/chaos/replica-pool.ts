// The bot replicas of a chaos run: `src/main.ts` child processes on one database, started with
// PORT=0 (each restart gets a new port), SIGKILLed at random and replaced, SIGTERMed at the end.
// Keeps the list of live /slack/events endpoints the traffic is sent to.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startScript, type RunningProcess } from '../support/processes.js';
import type { Random } from './random.js';

/** One replica process. */
export interface Replica {
  /** 1, 2, 3, … in start order (a restart is a new replica). */
  number: number;
  process: RunningProcess;
  /** Known once it logged service-started. */
  port: number | null;
  /** Ready and not killed or stopping: traffic may go here. */
  live: boolean;
  /** Why the pool ended it; null while it runs (an exit then is a crash). */
  endedBy: ReplicaExit['reason'] | null;
  startedAt: number;
  readyAt: number | null;
}

/** How a replica ended. */
export interface ReplicaExit {
  number: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** 'kill' (chaos), 'term' (the end), 'slow-start' (not ready in time), 'crash' (exited by itself). */
  reason: 'kill' | 'term' | 'slow-start' | 'crash';
}

/** Options of a ReplicaPool. */
export interface ReplicaPoolOptions {
  /** The environment of every replica (PORT is set by the pool). */
  env: Record<string, string>;
  /** Where each replica's log is written at the end (omit to keep logs in memory only). */
  logDir?: string;
  /** Longest wait for a replica to log service-started (ms, default 90 s). */
  startTimeoutMs?: number;
  /** Progress lines (default: none). */
  say?: (line: string) => void;
}

/** Starts, kills, replaces and stops the replicas. */
export class ReplicaPool {
  readonly replicas: Replica[] = [];
  readonly exits: ReplicaExit[] = [];
  /** What happened to the replicas, one line per event, with seconds since the pool began. */
  readonly history: string[] = [];
  private readonly began = Date.now();
  kills = 0;
  /** Kill turns skipped because fewer than two replicas were ready. */
  killsSkipped = 0;
  /** Replicas that exited by themselves or did not become ready in time. */
  crashes = 0;
  private readonly startTimeoutMs: number;
  private readonly readyWaits = new Map<number, Promise<void>>();
  private stopping = false;

  constructor(private readonly options: ReplicaPoolOptions) {
    this.startTimeoutMs = options.startTimeoutMs ?? 90_000;
  }

  /** Starts `count` replicas and waits until all are ready. */
  async start(count: number): Promise<void> {
    const started = Array.from({ length: count }, () => this.spawn());
    await Promise.all(started.map((replica) => this.whenReady(replica)));
    const notReady = started.filter((replica) => !replica.live);
    if (notReady.length) throw new Error(`replicas ${notReady.map((replica) => replica.number).join(', ')} did not start:\n${notReady.map((replica) => replica.process.stderr()).join('\n')}`);
  }

  /** The /slack/events URLs of the ready replicas. */
  liveEndpoints(): string[] {
    return this.replicas.filter((replica) => replica.live && replica.port !== null).map((replica) => eventsUrl(replica.port ?? 0));
  }

  /**
   * SIGKILLs one random ready replica (only while another one is ready, so Slack always has
   * somewhere to send) and starts its replacement. Returns the killed replica, or null.
   */
  async killRandom(random: Random): Promise<Replica | null> {
    const live = this.replicas.filter((replica) => replica.live);
    if (this.stopping) return null;
    if (live.length < 2) {
      this.killsSkipped += 1;
      return null;
    }
    const victim = random.pick(live);
    victim.live = false;
    victim.endedBy = 'kill';
    victim.process.kill('SIGKILL');
    this.kills += 1;
    await victim.process.exited;
    this.note(`killed replica ${victim.number} (port ${victim.port}); starting replica ${this.replicas.length + 1}`);
    this.spawn();
    return victim;
  }

  /** SIGTERMs every replica and waits for them (SIGKILL after `graceMs`); returns the exits of those that were ready. */
  async stopAll(graceMs = 40_000): Promise<ReplicaExit[]> {
    this.stopping = true;
    const running = this.replicas.filter((replica) => replica.process.child.exitCode === null && replica.process.child.signalCode === null);
    for (const replica of running) {
      replica.live = false;
      replica.endedBy = 'term';
      replica.process.kill('SIGTERM');
    }
    await Promise.all(running.map(async (replica) => {
      const timer = setTimeout(() => replica.process.kill('SIGKILL'), graceMs);
      await replica.process.exited;
      clearTimeout(timer);
    }));
    return this.exits.filter((exit) => running.some((replica) => replica.number === exit.number && replica.readyAt !== null));
  }

  /** Writes each replica's stdout and stderr to logDir; returns the directory (or null). */
  async saveLogs(): Promise<string | null> {
    const directory = this.options.logDir;
    if (!directory) return null;
    await mkdir(directory, { recursive: true });
    for (const replica of this.replicas) {
      await writeFile(join(directory, `replica-${replica.number}.log`), `${replica.process.lines.join('\n')}\n--- stderr ---\n${replica.process.stderr()}`);
    }
    await writeFile(join(directory, 'replicas.log'), `${this.history.join('\n')}\n`);
    return directory;
  }

  /** Every stdout line of every replica, parsed where it is JSON. */
  logRecords(): Array<{ replica: number; record: Record<string, unknown> }> {
    const records: Array<{ replica: number; record: Record<string, unknown> }> = [];
    for (const replica of this.replicas) {
      for (const line of replica.process.lines) {
        try {
          records.push({ replica: replica.number, record: JSON.parse(line) as Record<string, unknown> });
        } catch {
          // not a JSON line
        }
      }
    }
    return records;
  }

  /** Start-to-ready times of the replicas that became ready (ms). */
  startTimes(): number[] {
    return this.replicas.flatMap((replica) => (replica.readyAt === null ? [] : [replica.readyAt - replica.startedAt]));
  }

  private note(line: string, loud = true): void {
    this.history.push(`${((Date.now() - this.began) / 1000).toFixed(1).padStart(6)} s  ${line}`);
    if (loud) this.options.say?.(line);
  }

  private spawn(): Replica {
    const replica: Replica = {
      number: this.replicas.length + 1,
      process: startScript('src/main.ts', { ...this.options.env, PORT: '0' }),
      port: null,
      live: false,
      endedBy: null,
      startedAt: Date.now(),
      readyAt: null,
    };
    this.replicas.push(replica);
    this.note(`replica ${replica.number} spawned (pid ${replica.process.child.pid})`, false);
    void replica.process.exited.then(({ code, signal }) => {
      replica.live = false;
      const reason = replica.endedBy ?? 'crash';
      this.exits.push({ number: replica.number, code, signal, reason });
      this.note(`replica ${replica.number} exited (${reason}; code ${code}, signal ${signal})`, false);
      if (reason !== 'crash') return;
      replica.endedBy = 'crash';
      this.crashes += 1;
      this.note(`replica ${replica.number} exited by itself; stderr: ${replica.process.stderr().slice(-500)}`);
      if (!this.stopping) this.spawn();
    });
    void this.whenReady(replica);
    return replica;
  }

  private whenReady(replica: Replica): Promise<void> {
    let waiting = this.readyWaits.get(replica.number);
    if (!waiting) {
      waiting = replica.process.waitForLog(/^service-started/, this.startTimeoutMs).then(
        (record) => {
          replica.port = typeof record['port'] === 'number' ? record['port'] : null;
          replica.readyAt = Date.now();
          replica.live = replica.endedBy === null && !this.stopping && replica.port !== null;
          this.note(`replica ${replica.number} ready on port ${replica.port} after ${((replica.readyAt - replica.startedAt) / 1000).toFixed(1)} s`, false);
        },
        (error: unknown) => {
          this.note(`replica ${replica.number} not ready: ${String(error).slice(0, 300)}`, replica.endedBy === null);
          // Exited before it was ready (counted as a crash on exit), or too slow: replaced.
          if (replica.endedBy === null && replica.process.child.exitCode === null) {
            replica.endedBy = 'slow-start';
            replica.process.kill('SIGKILL');
            this.crashes += 1;
            if (!this.stopping) this.spawn();
          }
        },
      );
      this.readyWaits.set(replica.number, waiting);
    }
    return waiting;
  }
}

/** The Events API URL of a replica (loopback only). */
export function eventsUrl(port: number): string {
  return `http://127.0.0.1:${port}/slack/events`;
}
