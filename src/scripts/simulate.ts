/**
 * `npm run simulate -- [--devices N] [--interval S] [--url U] [--watch] …`: simulated agents against
 * a running server (src/scripts/simulator.ts does the work). It starts no server. Without `--key` it
 * signs in (`--email`/`--password`, else ADMIN_EMAIL/ADMIN_PASSWORD, or `--token`), finds or creates
 * the "Simulated fleet" partner and organization and gets an enrollment key there (an earlier run's
 * is rotated); with `--key` it only enrolls. `--watch` prints the fleet's status changes from the
 * `deviceStatusChanged` GraphQL subscription. Exit codes: 2 for a usage error, 1 when signing in,
 * setting up or enrolling fails.
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ApiSession, FLEET_NAME, LoginError, fileCredentials, prepareFleet, startSimulation, subscriptionHelp, watchDeviceStatus, type Simulation, type Watch } from './simulator.js';

const USAGE = `Usage: npm run simulate -- [options]

Without --key the simulator signs in as an administrator, finds or creates the partner and the
organization "${FLEET_NAME}" and an enrollment key "simulator" there (an earlier run's key is
rotated: its previous value stops working), then enrolls.
Run it again with the same --prefix and the same devices enroll again (by machine id, with the
agents' tokens from --state while they are still online).

  --email E           sign in as E (default: ADMIN_EMAIL from the environment)
  --password P        … with P (default: ADMIN_PASSWORD from the environment)
  --token T           or use this access token or API key (rmm_…) instead of signing in
  --key K             enroll with this enrollment key (enr_…; or ENROLLMENT_KEY) and skip the set-up
  --watch             print each status change of the fleet (GraphQL subscription deviceStatusChanged);
                      with --key it needs --token or --email/--password
  --url U             server root URL (default http://127.0.0.1:$PORT, PORT defaulting to 3000)
  --devices N         simulated agents (default 10, at most 10000)
  --interval S        seconds between heartbeats (default 60)
  --jitter S          up to S more seconds before each heartbeat, at random (default: the interval)
  --ws                keep each agent's WebSocket channel open (pushed commands, requests)
  --reboot-seconds S  how long a rebooting agent stays silent (default 30)
  --fail-installs P   P percent of the machines fail their software installs (exit 1603; default 0)
  --prefix P          hostnames and machine ids are P-001…; the same prefix re-enrolls the same devices (default sim)
  --fail T[,T…]       command types some agents answer failed (a staged rollout then pauses), with --fail-share
  --fail-share F      the share of agents (0 to 1, the same ones each run) that fail them (default 0.2 with --fail)
  --state F           where the agents keep their tokens between runs (default ${path.join(os.tmpdir(), 'rmm-simulator-agents.json')})
  --duration S        stop after S seconds (default: run until Ctrl-C)
  --quiet             no per-agent log lines, only the periodic summary (and --watch's lines)

A server started without ADMIN_EMAIL/ADMIN_PASSWORD created admin@localhost and printed its
password once in its log ("created the first platform admin"): pass --email admin@localhost --password <it>.`;

const KEY_HOWTO = `Alternatively, create an enrollment key yourself and pass it with --key (needs devices:write in the
organization; an organization user may leave out orgId: the key is for their own organization):
  TOKEN=$(curl -s -X POST "$URL/api/v1/auth/login" -H 'content-type: application/json' \\
    -d '{"email":"<email>","password":"<password>"}' | jq -r .accessToken)   # with MFA: then POST /api/v1/auth/mfa/verify
  curl -s "$URL/api/v1/orgs/organizations" -H "authorization: Bearer $TOKEN" | jq '.data[] | {id, name}'
  curl -s -X POST "$URL/api/v1/enrollment-keys" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"name":"simulator","orgId":"<organization id>"}' | jq -r .key
  npm run simulate -- --key <key> [--watch --token $TOKEN]`;

function usage(problem: string): never {
  process.stderr.write(`${problem}\n\n${USAGE}\n`);
  process.exit(2);
}

function fail(problem: string, howto = false): never {
  process.stderr.write(`${problem}\n${howto ? `\n${KEY_HOWTO}\n` : ''}`);
  process.exit(1);
}

function number(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) usage(`--${name} must be a number from ${min} to ${max}`);
  return n;
}

const out = (line: string) => void process.stdout.write(`${line}\n`);
const stamped = (line: string) => out(`${new Date().toISOString()} ${line}`);

/** Signs in, or takes --token; a refusal ends the run with what to do instead. */
async function signIn(url: string, token: string | undefined, email: string | undefined, password: string | undefined): Promise<ApiSession> {
  if (token) return ApiSession.fromToken(url, token);
  try {
    return await ApiSession.login(url, email!, password!);
  } catch (error) {
    if (!(error instanceof LoginError)) throw error;
    if (error.reason === 'unreachable') fail(error.message);
    const hint =
      error.reason === 'mfa'
        ? 'Sign in with your second factor yourself and pass the access token with --token, or use an API key (--token rmm_…).'
        : 'Check --email/--password (or ADMIN_EMAIL/ADMIN_PASSWORD: the same values the server was started with).';
    fail(`${error.message}\n${hint}`, true);
  }
}

async function main(): Promise<void> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        key: { type: 'string' },
        email: { type: 'string' },
        password: { type: 'string' },
        token: { type: 'string' },
        watch: { type: 'boolean' },
        url: { type: 'string' },
        devices: { type: 'string', short: 'n' },
        interval: { type: 'string' },
        jitter: { type: 'string' },
        ws: { type: 'boolean' },
        'reboot-seconds': { type: 'string' },
        'fail-installs': { type: 'string' },
        prefix: { type: 'string' },
        fail: { type: 'string' },
        'fail-share': { type: 'string' },
        state: { type: 'string' },
        duration: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    usage((error as Error).message);
  }
  if (values.help) {
    out(`${USAGE}\n\n${KEY_HOWTO}`);
    return;
  }
  const url = ((values.url as string | undefined) ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(url)) usage('--url must be an http(s) URL such as http://127.0.0.1:3000');
  const devices = number('devices', values.devices as string | undefined, 10, 1, 10_000);
  const intervalSeconds = number('interval', values.interval as string | undefined, 60, 0.05, 3600);
  const jitterSeconds = number('jitter', values.jitter as string | undefined, intervalSeconds, 0, 3600);
  const rebootSeconds = number('reboot-seconds', values['reboot-seconds'] as string | undefined, 30, 0, 3600);
  const failInstallsPercent = number('fail-installs', values['fail-installs'] as string | undefined, 0, 0, 100);
  const failTypes = ((values.fail as string | undefined) ?? '').split(',').map((t) => t.trim()).filter(Boolean);
  const failing = { types: failTypes, share: failTypes.length === 0 ? 0 : number('fail-share', values['fail-share'] as string | undefined, 0.2, 0, 1) };
  const duration = values.duration === undefined ? null : number('duration', values.duration as string, 0, 1, 7 * 86_400);
  const log = values.quiet ? () => {} : stamped;
  const watch = values.watch === true;

  let key = (values.key as string | undefined) ?? process.env.ENROLLMENT_KEY;
  const token = values.token as string | undefined;
  const email = (values.email as string | undefined) ?? process.env.ADMIN_EMAIL;
  const password = (values.password as string | undefined) ?? process.env.ADMIN_PASSWORD;
  const credentials = Boolean(token) || Boolean(email && password);
  if (!key && !credentials) {
    usage(
      `Nothing to enroll with: pass --email and --password (or set ADMIN_EMAIL and ADMIN_PASSWORD, as for the server), --token, or an enrollment key with --key.${email || password ? ` (${email ? '--password' : '--email'} is missing.)` : ''}`,
    );
  }
  if (key && watch && !credentials) usage('--watch subscribes as a user: with --key, also pass --token, or --email and --password (or ADMIN_EMAIL/ADMIN_PASSWORD).');

  // Without a key: sign in and set up the organization. With --watch: sign in for the subscription.
  const session = !key || watch ? await signIn(url, token, email, password) : null;
  let orgId: string | null = null;
  if (!key) {
    try {
      const fleet = await prepareFleet(session!);
      key = fleet.enrollmentKey;
      orgId = fleet.orgId;
      const shown = `${key.split('_').slice(0, 2).join('_')}_…`;
      out(
        `Organization "${fleet.orgName}" ${fleet.orgId} (${fleet.created.organization ? 'created' : 'reused'}${fleet.created.partner ? ', in a new partner of the same name' : ''}); ` +
          (fleet.created.key ? `new enrollment key "simulator" ${shown}` : `enrollment key "simulator" rotated to ${shown} (its previous value stops working)`),
      );
      out(subscriptionHelp(url, fleet.orgId));
    } catch (error) {
      fail(`Setting up the organization failed: ${(error as Error).message}`, true);
    }
  }

  let watcher: Watch | null = null;
  if (watch) {
    // Before enrolling, so the new devices' first `online` shows. With --key the organization is not
    // known yet: every organization the caller sees.
    watcher = watchDeviceStatus({ url, session: session!, orgId, print: out });
    let timer: NodeJS.Timeout | undefined;
    const connected = await Promise.race([
      watcher.ready.then(
        () => true,
        (error: Error) => fail(error.message),
      ),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 10_000))),
    ]);
    clearTimeout(timer);
    // graphql-ws acknowledges no subscribe: give the server a moment to register it, so the first
    // enrollments' `new → online` are not missed.
    if (connected) await new Promise((resolve) => setTimeout(resolve, 300));
    if (!connected) process.stderr.write(`The GraphQL WebSocket at ${url}/graphql has not answered in 10 s; enrolling anyway (it keeps trying).\n`);
  }

  out(`Enrolling ${devices} simulated agent(s) at ${url} (heartbeat every ${intervalSeconds} s + 0..${jitterSeconds} s${values.ws ? ', WebSocket channel' : ''})`);
  let simulation: Simulation;
  try {
    simulation = await startSimulation({ url, enrollmentKey: key!, devices, intervalSeconds, jitterSeconds, rebootSeconds, failInstallsPercent, ws: values.ws === true, prefix: values.prefix as string | undefined, failing, credentials: fileCredentials((values.state as string | undefined) ?? path.join(os.tmpdir(), 'rmm-simulator-agents.json')), log });
  } catch (error) {
    await watcher?.stop();
    fail((error as Error).message);
  }
  if (!orgId && simulation.agents[0]?.orgId) {
    orgId = simulation.agents[0].orgId;
    out(`The key enrolls into organization ${orgId}.`);
    out(subscriptionHelp(url, orgId));
  }
  const report = () => {
    const s = simulation.stats();
    stamped(`agents ${s.running}/${s.agents} running, ${s.channels} channels, ${s.heartbeats} heartbeats, ${s.commands} commands, ${s.requests} requests`);
  };
  report();
  const ticker = setInterval(report, 10_000);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearInterval(ticker);
    await Promise.all([simulation.stop(), watcher?.stop()]);
    report();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  if (duration !== null) setTimeout(() => void stop(), duration * 1000);
}

void main();
