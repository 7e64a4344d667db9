#!/usr/bin/env node
// The `handoff` operator command. From an installed package it runs the compiled program
// (dist/cli.js, made by `npm run build`, with every dependency inside) on plain node; in a clone,
// where cli/main.ts exists, it runs the TypeScript sources through tsx (a devDependency, so not
// installed with the package), so the command always matches the code beside it. The exit
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
  // tsx is a devDependency: a clone has it after `npm ci`; an installed package never comes here.
  const { register } = await import('tsx/esm/api').catch((error) => {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    process.stderr.write('handoff: running from a clone needs its devDependencies (tsx): run npm ci\n');
    process.exit(1);
  });
  register();
  program = await import(sources.href);
} else {
  program = await import('../dist/cli.js');
}
process.exitCode = await program.main(process.argv);
