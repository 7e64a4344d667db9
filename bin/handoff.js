#!/usr/bin/env node
// The `handoff` operator command: registers tsx so the TypeScript sources run as they are,
// then hands over to cli/main.ts. The exit status is set, not forced, so output is flushed.
import { register } from 'tsx/esm/api';

// The SDK's notice about its future Node 22 requirement would precede every command's output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// A reader that stops early (`handoff dead --json | head`) is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

register();
const { main } = await import(new URL('../cli/main.ts', import.meta.url).href);
process.exitCode = await main(process.argv);
