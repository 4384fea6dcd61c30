/**
 * The commit the working directory is on, as `git rev-parse HEAD` prints it, read from the
 * repository's files: starting `git` costs a process start (tens of milliseconds, more on a busy
 * machine) at every `switchyard sim`, on the results thread beside the replay. Covers what a
 * checkout here looks like — `.git` as a directory or as a `gitdir:` file (a worktree or
 * submodule), `HEAD` naming a branch or holding a commit (detached), the branch as a loose ref or
 * in `packed-refs`, a worktree's refs in its `commondir` — and asks `git` itself for anything else
 * (GIT_DIR set, a symbolic ref to a symbolic ref, a ref not found).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

const SHA = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * The full commit hash of HEAD of the repository holding `cwd`, or 'unknown' when there is none
 * (or `git` is not installed). Never throws.
 */
export function gitRevision(cwd: string = process.cwd()): string {
  try {
    const fromFiles = process.env.GIT_DIR === undefined ? revisionFromFiles(cwd) : null;
    if (fromFiles !== null) return fromFiles;
  } catch {
    // An unexpected layout: git knows.
  }
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** HEAD's commit read from the files of the repository above `cwd`; null when they do not say plainly. */
function revisionFromFiles(cwd: string): string | null {
  const gitDir = findGitDir(resolve(cwd));
  if (gitDir === null) return null;
  const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
  if (SHA.test(head)) return head;
  if (!head.startsWith('ref: ')) return null;
  const ref = head.slice(5).trim();
  if (!ref.startsWith('refs/')) return null;
  const commonFile = join(gitDir, 'commondir');
  const commonDir = existsSync(commonFile) ? resolve(gitDir, readFileSync(commonFile, 'utf8').trim()) : gitDir;
  for (const dir of new Set([gitDir, commonDir])) {
    const loose = join(dir, ref);
    if (existsSync(loose) && statSync(loose).isFile()) {
      const sha = readFileSync(loose, 'utf8').trim();
      return SHA.test(sha) ? sha : null;
    }
  }
  const packed = join(commonDir, 'packed-refs');
  if (!existsSync(packed)) return null;
  for (const line of readFileSync(packed, 'utf8').split('\n')) {
    const [sha, name] = line.trim().split(' ');
    if (name === ref && sha !== undefined && SHA.test(sha)) return sha;
  }
  return null;
}

/** The git directory of the nearest `.git` at or above `dir` (a `gitdir:` file followed); null when none. */
function findGitDir(dir: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    const dotGit = join(d, '.git');
    if (existsSync(dotGit)) {
      if (statSync(dotGit).isDirectory()) return dotGit;
      const text = readFileSync(dotGit, 'utf8').trim();
      if (!text.startsWith('gitdir: ')) return null;
      const target = text.slice(8).trim();
      return isAbsolute(target) ? target : resolve(d, target);
    }
    if (dirname(d) === d) return null;
  }
}
