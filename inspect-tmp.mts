import { PGlite } from '@electric-sql/pglite';
const db = await PGlite.create(process.argv[2] + '/pglite');
for (const sql of ['select id, thread_key from sessions', 'select id, status, text from steer_messages', 'select count(*) from context_messages', 'select * from session_leases']) {
  console.log(sql, JSON.stringify((await db.query(sql)).rows));
}
await db.close();
