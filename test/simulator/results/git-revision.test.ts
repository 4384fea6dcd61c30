import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gitRevision } from '../../../simulator/results/git-revision.ts';

const root = mkdtempSync(join(tmpdir(), 'switchyard-git-revision-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();

describe('gitRevision', () => {
  const repo = join(root, 'repo');
  git(root, 'init', '-q', repo);
  writeFileSync(join(repo, 'a.txt'), 'a');
  git(repo, 'add', 'a.txt');
  git(repo, 'commit', '-q', '-m', 'one');
  mkdirSync(join(repo, 'sub', 'dir'), { recursive: true });

  it('reads a loose branch ref, also from a folder below the root', () => {
    expect(gitRevision(repo)).toBe(git(repo, 'rev-parse', 'HEAD'));
    expect(gitRevision(join(repo, 'sub', 'dir'))).toBe(git(repo, 'rev-parse', 'HEAD'));
  });

  it('reads a packed ref, a worktree on another branch and a detached HEAD as git does', () => {
    git(repo, 'pack-refs', '--all');
    expect(gitRevision(repo)).toBe(git(repo, 'rev-parse', 'HEAD'));
    const wt = join(root, 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'other', wt);
    writeFileSync(join(wt, 'b.txt'), 'b');
    git(wt, 'add', 'b.txt');
    git(wt, 'commit', '-q', '-m', 'two');
    expect(gitRevision(wt)).toBe(git(wt, 'rev-parse', 'HEAD'));
    expect(gitRevision(wt)).not.toBe(gitRevision(repo));
    git(repo, 'checkout', '-q', '--detach', 'HEAD');
    expect(gitRevision(repo)).toBe(git(repo, 'rev-parse', 'HEAD'));
  });

  it('is unknown outside a repository', () => {
    const bare = mkdtempSync(join(tmpdir(), 'switchyard-no-repo-'));
    try {
      expect(gitRevision(bare)).toBe('unknown');
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });
});
