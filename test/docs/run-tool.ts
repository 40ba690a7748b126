// Runs a tool of the repository's node_modules (tsc, typedoc) under this Node, from the
// repository's root: what it printed when it failed ('' when it exited 0).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export function runTool(root: string, script: string, args: string[]): string {
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', script), ...args], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
    });
    return '';
  } catch (e) {
    const error = e as { stdout?: string; stderr?: string };
    return `${error.stdout ?? ''}${error.stderr ?? ''}` || String(e);
  }
}
