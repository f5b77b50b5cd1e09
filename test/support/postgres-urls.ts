// Where test databases live. TEST_DATABASE_URL names a database on the server tests may use
// to create and drop their own databases; the global setup sets it for the run when it had to
// find or start a server itself (test/support/postgres-server.ts).

/** The server tests use when nothing else is configured: the local one, role root, no password. */
export const defaultAdminUrl = 'postgresql://root@127.0.0.1:5432/test';

/** The connection string used to create and drop test databases. */
export function adminUrl(): string {
  return process.env['TEST_DATABASE_URL'] ?? defaultAdminUrl;
}

/** The migrated template database of this test run. */
export function templateDatabase(): string {
  return process.env['HIPPO_TEST_TEMPLATE'] ?? `hippo_template_${process.env['HIPPO_TEST_RUN'] ?? 'local'}`;
}

/** The same server with another database name. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
