// The deployment files (Dockerfile, compose.yaml, deploy/hippo.service) agree with the code: the
// image installs only `dependencies`, so everything src/ imports must be one; the settings they
// name must be variables the configuration reads.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { minVersion, satisfies } from 'semver';
import { describe, expect, it } from 'vitest';
import { configKeys } from '../../src/config.js';
import { repoRoot } from '../support/processes.js';

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8');

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The package a bare import names ("@scope/name" or "name"). */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? specifier);
}

describe('deployment files', () => {
  it('needs no devDependency at run time (the image runs npm ci --omit=dev)', () => {
    const manifest = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const imported = new Set<string>();
    for (const file of sourceFiles(join(repoRoot, 'src'))) {
      // Import and export statements (not the words "from '…'" in a comment), and import() calls.
      for (const match of readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"./][^'"]*)['"]|(?:^|\n)\s*import\s*['"]([^'"./][^'"]*)['"]|\bimport\(\s*['"]([^'"./][^'"]*)['"]/g)) {
        const specifier = match[1] ?? match[2] ?? match[3] ?? '';
        if (specifier.startsWith('node:') || builtinModules.includes(packageOf(specifier))) continue;
        imported.add(packageOf(specifier));
      }
    }
    expect([...imported].filter((name) => !(name in manifest.dependencies)).sort()).toEqual([]);
    // The same production install everywhere, without @prisma/client's optional peers (the Prisma
    // CLI, TypeScript): test/support/production-copy.ts builds what it installs for the ship-mode suite.
    const install = 'npm ci --omit=dev --legacy-peer-deps';
    expect(read('Dockerfile')).toContain(`RUN ${install} `);
    expect(read('deploy/hippo.service')).toContain(`sudo ${install}\n`);
    expect(read('docs/operations.md')).toContain(`git pull && ${install}\``);
    expect(manifest.dependencies).toHaveProperty('tsx'); // the image runs the TypeScript source with it
  });

  it('runs the service as a non-root user with a health check on /healthz', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^FROM node:24-slim$/m); // Node 24 LTS: 20 is past end of life
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    expect(read('compose.yaml')).toMatch(/image: postgres:15/);
  });

  it('keeps the systemd settings file root-only: systemd reads it as root, the service user cannot', () => {
    const unit = read('deploy/hippo.service');
    expect(unit).toMatch(/^EnvironmentFile=\/etc\/hippo\.env$/m);
    const installs = [...unit.matchAll(/install (.*) \/dev\/null \/etc\/hippo\.env/g)].map((match) => match[1]);
    expect(installs).toEqual(['-m 600 -o root -g root']);
  });

  it('starts the service with npm start\'s heap limit everywhere: Dockerfile CMD, systemd ExecStart, compose', () => {
    const heapLimit = '--max-old-space-size=1536';
    const manifest = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(manifest.scripts['start']).toContain(heapLimit);
    const cmd = /^CMD \[(.*)\]$/m.exec(read('Dockerfile'))?.[1] ?? '';
    expect(JSON.parse(`[${cmd}]`)).toEqual(['node', heapLimit, '--import', 'tsx', 'src/main.ts']);
    expect(read('deploy/hippo.service')).toMatch(new RegExp(`^ExecStart=/usr/bin/node ${heapLimit} --import tsx src/main\\.ts`, 'm'));
    // compose runs the image's CMD; a `command:` there would have to repeat the limit.
    const compose = read('compose.yaml');
    expect(compose.match(/^\s+(command|entrypoint):.*$/gm)?.filter((line) => !line.includes(heapLimit)) ?? []).toEqual([]);
  });

  it('splits the Compose set-up into one ingest process and workers that publish no port (HIPPO_ROLE)', () => {
    const roles = read('deploy/compose.roles.yaml');
    const service = (name: string) => new RegExp(`^  ${name}:\\n((?:    .*\\n|\\n)*)`, 'm').exec(roles)?.[1] ?? '';
    expect(service('hippo')).toMatch(/^      HIPPO_ROLE: ingest$/m);
    const worker = service('hippo-worker');
    expect(worker).toMatch(/^      HIPPO_ROLE: worker$/m);
    expect(worker).toMatch(/^      DATABASE_URL: postgresql:/m); // roles share one Postgres
    expect(worker).not.toMatch(/^    ports:/m);
    expect(worker).not.toMatch(/^    (command|entrypoint):/m); // the image's CMD, with its heap limit
    for (const name of [...roles.matchAll(/^      ([A-Z_]+):/gm)].map((match) => match[1])) expect(configKeys).toContain(name);
  });

  it('gives the shell tool its sandbox in the image, and says what a container must allow for it', () => {
    expect(read('Dockerfile')).toMatch(/^RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap /m);
    for (const path of ['compose.yaml', 'docs/operations.md']) {
      for (const option of ['seccomp=unconfined', 'apparmor=unconfined', 'systempaths=unconfined']) expect(read(path), `${path} names ${option}`).toContain(option);
    }
  });

  it('names the Node versions it runs on where people look: engines, README, the image', () => {
    const manifest = JSON.parse(read('package.json')) as { engines: { node: string } };
    expect(manifest.engines.node).toBe('>=20.19'); // the suite passes on 20.19 and 24
    expect(read('README.md')).toMatch(/Node\.js 20\.19 or later \(24 LTS recommended/);
    expect(read('docs/operations.md')).toMatch(/Node\.js 20\.19 or later \(24 LTS recommended/);
  });

  it('installs no production package whose own engines refuse the oldest Node that engines allows', () => {
    const oldest = minVersion(JSON.parse(read('package.json')).engines.node)!.version;
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { dev?: boolean; devOptional?: boolean; engines?: { node?: string } }> };
    // devOptional: dev tools and optional peers (the Prisma CLI), which the production install leaves out.
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !entry.dev && !entry.devOptional && entry.engines?.node && !satisfies(oldest, entry.engines.node))
      .map(([path, entry]) => `${path.replace(/^.*node_modules\//, '')} needs node ${entry.engines!.node}`);
    expect(refusing).toEqual([]);
  });

  it('names only configuration variables Hippo reads', () => {
    const named = new Set<string>();
    for (const match of read('compose.yaml').matchAll(/^ {6}([A-Z][A-Z0-9_]+):/gm)) named.add(match[1] ?? '');
    for (const match of read('deploy/hippo.service').matchAll(/\b([A-Z][A-Z0-9_]+)=/g)) named.add(match[1] ?? '');
    for (const match of read('Dockerfile').matchAll(/\b([A-Z][A-Z0-9_]+)=/g)) named.add(match[1] ?? '');
    const foreign = [...named].filter((name) => !configKeys.includes(name as never) && !name.startsWith('POSTGRES_') && name !== 'NODE_ENV');
    expect(foreign).toEqual([]);
  });
});
