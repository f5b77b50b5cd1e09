// Prisma CLI configuration (authoring migrations, drift check). The service itself never runs
// the CLI: it applies prisma/migrations on its own at start-up (src/adapters/storage/migrator.ts).
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: {
    url: process.env['DATABASE_URL'] ?? 'postgresql://root@127.0.0.1:5432/hippo_dev',
    ...(process.env['SHADOW_DATABASE_URL'] ? { shadowDatabaseUrl: process.env['SHADOW_DATABASE_URL'] } : {}),
  },
});
