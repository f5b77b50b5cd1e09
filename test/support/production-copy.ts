// The repository as the image holds it: the files the Dockerfile copies, and only the packages a
// production install puts in node_modules (`npm ci --omit=dev --legacy-peer-deps`: no
// devDependencies, and no peers such as @prisma/client's optional `prisma` and `typescript`). The
// packages are hard links to this checkout's node_modules (same file system) or copies: no
// network, no install, a second or two.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repoRoot } from './processes.js';

/** What the Dockerfile copies besides node_modules. */
const imageFiles = ['package.json', 'package-lock.json', 'tsconfig.json', 'prisma', 'src', 'slack', 'scripts'];

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
}

/** The top-level packages a production install keeps, by the lockfile's flags. */
export function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && !entry.dev && !entry.devOptional && !entry.peer)
    .map(([path]) => path.slice('node_modules/'.length))
    // Optional packages for other platforms (sharp's binaries) are not in this checkout either.
    .filter((name) => existsSync(join(repoRoot, 'node_modules', name)));
}

/** Builds the copy in a new temporary folder and returns its path. */
export function productionCopy(): string {
  const root = mkdtempSync(join(tmpdir(), 'hippo-production-'));
  for (const file of imageFiles) cpSync(join(repoRoot, file), join(root, file), { recursive: true });
  for (const name of productionPackages()) {
    const target = join(root, 'node_modules', name);
    mkdirSync(dirname(target), { recursive: true });
    try {
      execFileSync('cp', ['-al', join(repoRoot, 'node_modules', name), target]);
    } catch {
      cpSync(join(repoRoot, 'node_modules', name), target, { recursive: true });
    }
  }
  return root;
}
