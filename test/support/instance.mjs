// A server instance in a process of its own, for tests that kill one (SIGKILL) mid-stream. It is what
// `node dist/src/main.js` runs, from the same build (`pretest` builds it), plus the test's tunables:
// configuration from the environment, StartOptions as JSON in TEST_START_OPTIONS. Prints
// `READY <url>` once listening; SIGTERM stops it gracefully.
import { loadConfig } from '../../dist/src/config.js';
import { startServer } from '../../dist/src/server.js';

const server = await startServer(loadConfig(process.env), JSON.parse(process.env.TEST_START_OPTIONS ?? '{}'));
process.stdout.write(`READY ${server.url}\n`);
process.on('SIGTERM', () => {
  server.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
