// Builds the arena's browser client (games/arena/client) with Vite into a folder: the engine
// from its sources (the backstep-source condition), three.js from node_modules.

import { fileURLToPath } from 'node:url';
import { build, defaultClientConditions } from 'vite';

export const CLIENT_ROOT = fileURLToPath(new URL('../../games/arena/client/', import.meta.url));
export const DEFAULT_CLIENT_OUT = fileURLToPath(new URL('../../out/arena-client/', import.meta.url));

/** Builds the client into `outDir` (emptied first); resolves when written. */
export async function buildClient(outDir: string = DEFAULT_CLIENT_OUT): Promise<string> {
  await build({
    root: CLIENT_ROOT,
    configFile: false,
    base: './',
    logLevel: 'warn',
    resolve: { conditions: ['backstep-source', ...defaultClientConditions] },
    build: {
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      reportCompressedSize: false,
      chunkSizeWarningLimit: 2000,
    },
  });
  return outDir;
}
