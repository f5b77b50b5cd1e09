// Starts the fake model server (scripted by a scenario) in a child process and talks to it.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FakeModelServer } from '../../test/fakes/fake-model-server.js';
import { repoRoot } from './report.js';
import type { Scenario, ScenarioCounters } from './scenarios.js';

export type HostMessage =
  | { type: 'configure'; id: number; scenario: Scenario }
  | { type: 'stats'; id: number }
  | { type: 'close' };

export type ProcessMessage =
  | { type: 'ready'; url: string }
  | { type: 'done'; id: number }
  | { type: 'stats'; id: number; counters: ScenarioCounters; requests: number; refused: number; cpuMs: number };

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

export interface ModelStats {
  counters: ScenarioCounters;
  requests: number;
  /** Requests refused as longer than the window (scenario.refuseAboveTokens). */
  refused: number;
  /** CPU time the model process used so far, in milliseconds. */
  cpuMs: number;
}

export interface ModelHost {
  /** Base URL: ending in /v1 (OpenAI), without it (Anthropic). */
  url: string;
  /** Replaces the script; forgets recorded requests, counters and the simulated cache. */
  configure(scenario: Scenario): Promise<void>;
  stats(): Promise<ModelStats>;
  /** A stand-in for the in-process fake that test/support/agent-harness.ts accepts: only `url` is used. */
  asHarnessModel(): FakeModelServer;
  close(): Promise<void>;
}

/**
 * Starts the model process; `simulateCache` turns on the fake's prompt-cache simulation, `provider`
 * anthropic serves the fake Messages API (whose cache honours only cache_control marks) instead.
 */
export async function startModelHost(scenario: Scenario, options: { simulateCache: boolean; provider?: 'openai' | 'anthropic' }): Promise<ModelHost> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./model-process.ts', import.meta.url)), [], {
    cwd: repoRoot,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_MODEL_SIMULATE_CACHE: options.simulateCache ? '1' : '0', BENCH_MODEL_PROVIDER: options.provider ?? 'openai' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (message: ProcessMessage) => void>();
  let nextId = 1;
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`model process exited early (code ${code})`)));
    child.on('message', (raw) => {
      const message = raw as ProcessMessage;
      if (message.type === 'ready') resolve(message.url);
      else pending.get(message.id)?.(message);
    });
  });
  child.removeAllListeners('exit');
  const request = (message: WithoutId<Extract<HostMessage, { id: number }>>): Promise<ProcessMessage> =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, (reply) => {
        pending.delete(id);
        resolve(reply);
      });
      child.send({ ...message, id });
    });
  const host: ModelHost = {
    url,
    configure: async (next) => void (await request({ type: 'configure', scenario: next })),
    stats: async () => {
      const reply = await request({ type: 'stats' });
      if (reply.type !== 'stats') throw new Error('model process: unexpected reply');
      return { counters: reply.counters, requests: reply.requests, refused: reply.refused, cpuMs: reply.cpuMs };
    },
    // The harness reads only `url` from the server it is given (and closes only its own).
    asHarnessModel: () => ({ url }) as unknown as FakeModelServer,
    close: () => closeChild(child),
  };
  await host.configure(scenario);
  return host;
}

/** Asks a benchmark child process to close (message `{ type: 'close' }`); kills it after 5 s. */
export function closeChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.send({ type: 'close' });
    setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
  });
}
