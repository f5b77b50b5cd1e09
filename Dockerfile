# Hippo's bot service. Build: docker build -t hippo .   Run: see compose.yaml and docs/operations.md.
# Node 24 LTS (Node 20 reached end of life in April 2026; Hippo still runs on 20.19+).
FROM node:24-slim

# bubblewrap: the shell tool's sandbox (TOOLS=shell). In a container it also needs user namespaces,
# which Docker's default seccomp, AppArmor and masked /proc refuse: see compose.yaml (security_opt).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*

ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=3000
WORKDIR /app

# Dependencies first (cached while only the source changes). tsx runs the TypeScript source, so it
# is a runtime dependency; the dev tools (TypeScript, vitest, the Prisma CLI, the embedded test
# Postgres) stay out. --legacy-peer-deps: without it npm also installs @prisma/client's optional
# peers, the Prisma CLI with Studio and TypeScript (about 240 MB, bench/RESULTS.md); the lockfile
# marks them devOptional, which --omit=dev keeps. The service applies migrations itself
# (src/adapters/storage/migrator.ts) and the generated client is committed: neither needs the CLI.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --legacy-peer-deps --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY prisma ./prisma
COPY src ./src
COPY slack ./slack
COPY scripts ./scripts

# Not root: the service needs to write only DATA_DIR (session workspaces, and the embedded
# database when DATABASE_URL is unset).
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000

# /healthz answers while the process runs; /readyz also checks the database, the chat adapters
# and whether the model endpoint takes the key. Node's fetch: the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node directly (not npm start): SIGTERM reaches the service, which lets sessions reach a
# checkpoint and flushes the outbox before it exits. The heap limit is npm start's (1.5 GiB).
CMD ["node", "--max-old-space-size=1536", "--import", "tsx", "src/main.ts"]
