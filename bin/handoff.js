#!/usr/bin/env node
// The `handoff` operator command. From an installed package it runs the compiled program
// (dist/cli.js, made by `npm run build`); in a clone, where cli/main.ts exists, it runs the
// TypeScript sources through tsx, so the command always matches the code beside it. The exit
// status is set, not forced, so output is flushed.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The SDK's notice about its future Node 22 requirement would precede every command's output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// A reader that stops early (`handoff dead --json | head`) is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const sources = new URL('../cli/main.ts', import.meta.url);
let program;
if (existsSync(fileURLToPath(sources))) {
  const { register } = await import('tsx/esm/api');
  register();
  program = await import(sources.href);
} else {
  program = await import('../dist/cli.js');
}
process.exitCode = await program.main(process.argv);
