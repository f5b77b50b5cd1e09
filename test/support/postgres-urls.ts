// Where test databases live. TEST_DATABASE_URL names a database on the server tests may use
// to create and drop their own databases (default: the local server's `test` database).

/** The connection string used to create and drop test databases. */
export function adminUrl(): string {
  return process.env['TEST_DATABASE_URL'] ?? 'postgresql://root@127.0.0.1:5432/test';
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
