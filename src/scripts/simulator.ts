/**
 * The agent simulator's core (the CLI is src/scripts/simulate.ts): N simulated agents that enroll
 * with an enrollment key and then behave like installed agents, over the public protocol only
 * (docs/agent-protocol.md) with fetch and `ws` — no server code is imported, so it runs against any
 * deployment. Each agent heartbeats every `intervalSeconds` plus 0..`jitterSeconds`, answers its
 * commands (inventory, scripts with deterministic output, reboots, self-updates, auto-update
 * switches), and with `ws` keeps the WebSocket channel open: pushed commands, heartbeats and
 * results over it, and answers to the server's requests.
 *
 * Also the CLI's set-up without a key (`prepareFleet`: sign in, find or create the "Simulated fleet"
 * partner and organization, get an enrollment key) and `--watch` (`watchDeviceStatus`: the
 * `deviceStatusChanged` GraphQL subscription over graphql-ws, one line per change).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

interface SimulationOptions {
  /** the server's root URL (the `/api/v1` prefix is added) */
  url: string;
  enrollmentKey: string;
  devices: number;
  /** seconds between heartbeats */
  intervalSeconds: number;
  /** up to this many seconds more before each heartbeat, at random (default: intervalSeconds) */
  jitterSeconds?: number;
  /** keep the WebSocket channel open */
  ws?: boolean;
  /** how long a rebooting agent stays silent (default 30 s) */
  rebootSeconds?: number;
  /** how long a self-update takes between `started` and the first heartbeat on the new version (default 2 s) */
  updateSeconds?: number;
  /** the share of machines, in percent, whose software installs fail (the same machines each run; default 0; `failInstalls` sets one agent) */
  failInstallsPercent?: number;
  /** hostnames and machine ids are `<prefix>-<n>`: the same prefix enrolls the same devices again (default `sim`) */
  prefix?: string;
  /** where the agents keep their tokens between runs (default: in this process only) */
  credentials?: CredentialStore;
  /** failure injected: this share (0 to 1) of the agents, the same ones each run, answer these command types `failed` (e.g. a staged rollout that pauses) */
  failing?: { types: string[]; share: number };
  log?: (line: string) => void;
}

/**
 * Agents' tokens by server and machine id, kept between runs as an installed agent keeps its
 * configuration: the server re-enrolls a device whose agent is still alive only with its current token.
 */
export interface CredentialStore {
  get(server: string, machineId: string): string | undefined;
  set(server: string, machineId: string, token: string): void;
}

/** Tokens kept in memory, shared by the runs of one process. */
const processCredentials = new Map<string, string>();
const inProcess: CredentialStore = {
  get: (server, machineId) => processCredentials.get(`${server} ${machineId}`),
  set: (server, machineId, token) => void processCredentials.set(`${server} ${machineId}`, token),
};

/** Tokens kept in a JSON file (readable by its owner only), for runs of the CLI one after another. */
export function fileCredentials(file: string): CredentialStore {
  const read = (): Record<string, string> => {
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    } catch {
      return {};
    }
  };
  return {
    get: (server, machineId) => read()[`${server} ${machineId}`],
    set: (server, machineId, token) => fs.writeFileSync(file, JSON.stringify({ ...read(), [`${server} ${machineId}`]: token }), { mode: 0o600 }),
  };
}

type AgentState = 'starting' | 'running' | 'rebooting' | 'stopped';

/** The agent version every simulated agent starts with. */
const AGENT_VERSION = '1.0.0';

export interface Simulation {
  agents: SimulatedAgent[];
  stats(): { agents: number; running: number; heartbeats: number; commands: number; requests: number; channels: number };
  stop(): Promise<void>;
}

interface Command {
  id: string;
  type: string;
  payload: Record<string, unknown>;
}
interface CommandResult {
  status: 'completed' | 'failed';
  exitCode?: number;
  stdout?: string;
  stderr?: string;
  result?: Record<string, unknown>;
}

const OS_MIX = [
  { osType: 'windows', osVersion: 'Windows 11 Pro 23H2', architecture: 'amd64' },
  { osType: 'linux', osVersion: 'Ubuntu 24.04 LTS', architecture: 'amd64' },
  { osType: 'macos', osVersion: 'macOS 14.5', architecture: 'arm64' },
  { osType: 'linux', osVersion: 'Debian 12', architecture: 'arm64' },
] as const;

/** A number in [0, 1) that depends only on `seed`: simulated facts stay the same from run to run. */
function stable(seed: string): number {
  return crypto.createHash('sha256').update(seed).digest().readUInt32BE(0) / 2 ** 32;
}

function nextPatch(version: string): string {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return m ? `${m[1]}.${m[2]}.${Number(m[3]) + 1}` : `${version}.1`;
}

// ── calling the API ─────────────────────────────────────────────────────────────────────────────

/** A URL under the server's `/api/v1`. */
function apiUrl(url: string, path: string): string {
  return `${url.replace(/\/+$/, '')}/api/v1${path}`;
}

/** A call to the API that failed; `message` is meant for a person. */
class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One JSON call under `/api/v1`: its status and body (parsed; the text when it is not JSON). A server
 * that cannot be reached is a LoginError `unreachable`, whose message says what to check.
 */
async function send(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ ok: boolean; status: number; body: any; text: string }> {
  let res: Response;
  try {
    res = await fetch(apiUrl(url, path), {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : (error as Error).message;
    throw new LoginError('unreachable', `Cannot reach the server at ${url} (${cause}). Is it running (npm start), and is --url right?`);
  }
  const text = await res.text();
  let parsed: any = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { ok: res.ok, status: res.status, body: parsed, text };
}

/** `send`, answering a 2xx answer's body; any other answer is an ApiError with the server's code and message. */
async function callApi<T>(url: string, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
  const answer = await send(url, method, path, body, headers);
  if (!answer.ok) {
    const code = typeof answer.body?.code === 'string' ? answer.body.code : null;
    const message = typeof answer.body?.message === 'string' ? answer.body.message : answer.text.slice(0, 200);
    throw new ApiError(answer.status, code, `${method} /api/v1${path}: HTTP ${answer.status}${code ? ` ${code}` : ''}: ${message}`);
  }
  return answer.body as T;
}

/** One simulated agent. */
class SimulatedAgent {
  readonly hostname: string;
  readonly machineId: string;
  private readonly os: (typeof OS_MIX)[number];
  deviceId: string | null = null;
  /** the organization the enrollment key put the device in */
  orgId: string | null = null;
  private agentId: string | null = null;
  private token: string | null = null;
  state: AgentState = 'starting';
  version = AGENT_VERSION;
  autoUpdate = true;
  /** command types this agent answers `failed` (exit 1) instead of running them: failure injected, e.g. for a rollout that pauses */
  readonly failing = new Set<string>();
  heartbeats = 0;
  commands = 0;
  requests = 0;
  private readonly handled = new Set<string>();
  /** threats a remove_threat deleted: no longer reported */
  private readonly removedThreats = new Set<string>();
  /** applications uninstalled on the server's request: no longer reported */
  private readonly uninstalled = new Set<string>();
  /** applications installed since the machine came (install_software, or a test's `installSoftware`), by name */
  private readonly installed = new Map<string, string>();
  /** this machine's software installs fail (exit 1603), as with a broken installer service */
  failInstalls: boolean;
  /** services whose state changed (start_service, or a test's `setService`), by name: running or not */
  private readonly services = new Map<string, boolean>();
  /** registry values (`path\\name`) and configuration file keys (`path:key`) a test set */
  private readonly registry = new Map<string, unknown>();
  private readonly configFiles = new Map<string, unknown>();
  /** The update's state once an install or a rollback changed it (else as the machine came). */
  private patchInstalled: boolean | null = null;
  private timer: NodeJS.Timeout | null = null;
  private socket: WebSocket | null = null;
  private reconnectDelayMs = 1_000;
  private updating = false;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly bootedAt = Date.now();

  constructor(
    private readonly options: Required<Omit<SimulationOptions, 'log'>> & { log: (line: string) => void },
    readonly index: number,
  ) {
    this.hostname = `${options.prefix}-${String(index + 1).padStart(3, '0')}`;
    this.machineId = `simulator-${options.prefix}-${index + 1}`;
    this.os = OS_MIX[index % OS_MIX.length]!;
    this.failInstalls = stable(`${this.machineId}:fail-installs`) * 100 < options.failInstallsPercent;
    if (stable(`${this.machineId}:failing`) < options.failing.share) for (const type of options.failing.types) this.failing.add(type);
  }

  get channelOpen(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** A call of the agent protocol, with the agent's token once it has one. */
  private post<T = unknown>(path: string, body: unknown): Promise<T> {
    return callApi<T>(this.options.url, 'POST', path, body, this.token ? { authorization: `Bearer ${this.token}` } : {});
  }

  /** Keeps a promise of background work, so `stop()` can wait for it; its failure is logged, never thrown. */
  private track(work: Promise<unknown>, what: string): void {
    const tracked = work.catch((error: Error) => this.fail(error, what)).finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private fail(error: Error, what: string): void {
    if (this.state === 'stopped') return;
    if (error instanceof ApiError && error.status === 401) {
      this.options.log(`${this.hostname}: credentials refused during ${what} (decommissioned or enrolled elsewhere); stopping`);
      this.halt();
      return;
    }
    this.options.log(`${this.hostname}: ${what} failed: ${error.message}`);
  }

  async start(): Promise<void> {
    const { url, credentials } = this.options;
    // A device whose agent (an earlier run) is still alive is enrolled again only with its token.
    const previous = credentials.get(url, this.machineId);
    const enrolled = await callApi<{ deviceId: string; agentId: string; authToken: string; orgId: string }>(
      url,
      'POST',
      '/agents/enroll',
      { enrollmentKey: this.options.enrollmentKey, hostname: this.hostname, ...this.os, agentVersion: this.version, machineId: this.machineId, hardwareInfo: this.hardware() },
      previous ? { authorization: `Bearer ${previous}` } : {},
    );
    credentials.set(url, this.machineId, enrolled.authToken);
    this.deviceId = enrolled.deviceId;
    this.orgId = enrolled.orgId;
    this.agentId = enrolled.agentId;
    this.token = enrolled.authToken;
    this.state = 'running';
    if (this.options.ws) this.connect();
    this.schedule(this.jitterMs());
  }

  private jitterMs(): number {
    return Math.random() * this.options.jitterSeconds * 1000;
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.state !== 'running') return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.track(this.heartbeat(), 'heartbeat');
      this.schedule(this.options.intervalSeconds * 1000 + this.jitterMs());
    }, delayMs);
  }

  private heartbeatBody() {
    const r = (what: string) => Math.round(stable(`${this.machineId}:${what}:${Math.floor(Date.now() / 60_000)}`) * 1000) / 10;
    return { agentVersion: this.version, metrics: { cpuPercent: r('cpu'), ramPercent: r('ram'), diskPercent: Math.round(stable(`${this.machineId}:disk`) * 900) / 10 } };
  }

  /** Over the channel when it is open (the answer comes as `heartbeat_ack`), else REST. */
  async heartbeat(): Promise<void> {
    if (this.state !== 'running') return;
    this.heartbeats += 1;
    if (this.channelOpen) {
      this.socket!.send(JSON.stringify({ type: 'heartbeat', ...this.heartbeatBody() }));
      return;
    }
    const answer = await this.post<{ commands: Command[]; upgradeTo: { version: string } | null }>(`/agents/${this.agentId}/heartbeat`, this.heartbeatBody());
    this.onHeartbeatAnswer(answer);
  }

  private onHeartbeatAnswer(answer: { commands: Command[]; upgradeTo: { version: string } | null }): void {
    for (const command of answer.commands) this.receive(command);
    if (answer.upgradeTo && this.autoUpdate && !this.updating && answer.upgradeTo.version !== this.version) {
      this.track(this.selfUpdate(answer.upgradeTo.version), 'self-update');
    }
  }

  private receive(command: Command): void {
    if (this.handled.has(command.id)) {
      this.options.log(`${this.hostname}: command ${command.id} handed out twice`);
      return;
    }
    this.handled.add(command.id);
    this.track(this.run(command), `command ${command.type}`);
  }

  private async run(command: Command): Promise<void> {
    // A script execution (it names one) and a software deployment's command are reported started first, as a real agent does.
    const reportsStart = command.type === 'security_scan' || (command.type === 'run_script' && typeof command.payload.executionId === 'string') || (command.type.endsWith('install_software') && typeof command.payload.deploymentId === 'string');
    if (reportsStart) await this.report(command, { status: 'running' });
    const result: CommandResult = this.failing.has(command.type) ? { status: 'failed', exitCode: 1, stderr: `simulated failure of ${command.type}\n` } : await this.execute(command);
    if (this.state === 'stopped') return;
    this.commands += 1;
    await this.report(command, result);
    this.options.log(`${this.hostname}: ${command.type} ${command.id} → ${result.status}${result.exitCode === undefined ? '' : ` (exit ${result.exitCode})`}`);
    if (command.type === 'reboot') this.reboot();
    // As a real agent does, a changed software list is reported at once.
    if (result.status === 'completed' && (command.type === 'install_software' || command.type === 'uninstall_software')) await this.sendInventory();
  }

  private async report(command: Command, result: CommandResult | { status: 'running' }): Promise<void> {
    if (this.channelOpen) this.socket!.send(JSON.stringify({ type: 'result', commandId: command.id, ...result }));
    else await this.post(`/agents/${this.agentId}/commands/${command.id}/result`, result);
  }

  private async execute(command: Command): Promise<CommandResult> {
    const { payload } = command;
    switch (command.type) {
      case 'refresh_inventory': {
        const inventory = this.inventory();
        await this.post(`/agents/${this.agentId}/inventory`, inventory);
        return { status: 'completed', exitCode: 0, result: { software: inventory.software.length, patches: inventory.patches.length } };
      }
      case 'run_script':
        return this.runScript(payload);
      case 'cancel_script':
        // Simulated scripts finish at once: there is never one left to stop.
        return { status: 'completed', exitCode: 0, stdout: `no running execution ${String(payload.executionId)}\n` };
      case 'reboot':
        return { status: 'completed', exitCode: 0, stdout: `Rebooting ${this.hostname}\n`, result: { rebooting: true } };
      case 'update':
      case 'update_agent': {
        const target = typeof payload.version === 'string' ? payload.version : typeof payload.toVersion === 'string' ? payload.toVersion : nextPatch(this.version);
        const from = this.version;
        await this.selfUpdate(target);
        return { status: 'completed', exitCode: 0, stdout: `Updated ${from} -> ${target}\n`, result: { from, to: target } };
      }
      case 'patch_scan':
        return { status: 'completed', exitCode: 0, result: { patches: [this.patch()] } };
      case 'install_patches': {
        const patches = Array.isArray(payload.patches) ? (payload.patches as { patchId: string }[]) : [];
        this.patchInstalled = true;
        return { status: 'completed', exitCode: 0, result: { patches: patches.map((p) => ({ patchId: p.patchId, status: 'installed' })) } };
      }
      case 'rollback_patch':
        this.patchInstalled = false;
        return { status: 'completed', exitCode: 0 };
      case 'install_software':
        if (this.failInstalls) return { status: 'failed', exitCode: 1603, stderr: `Fatal error during installation of ${String(payload.name)}\n` };
        if (typeof payload.name === 'string') this.installSoftware(payload.name, String(payload.version ?? '1.0.0'));
        return { status: 'completed', exitCode: 0, stdout: `Installed ${String(payload.version)}\n` };
      case 'uninstall_software':
        if (typeof payload.name === 'string') this.removeSoftware(payload.name);
        return { status: 'completed', exitCode: 0, stdout: `Uninstalled ${String(payload.name)}\n` };
      case 'policy_check':
        return { status: 'completed', exitCode: 0, result: { checks: (Array.isArray(payload.checks) ? payload.checks : []).map((check) => this.policyCheck(check as Record<string, unknown>)) } };
      case 'start_service':
        if (typeof payload.name !== 'string') return { status: 'failed', exitCode: 1, stderr: 'no service named\n' };
        this.services.set(payload.name, true);
        return { status: 'completed', exitCode: 0, stdout: `Started ${payload.name}\n` };
      case 'security_scan':
        return { status: 'completed', exitCode: 0, result: { threats: this.threats() } };
      case 'remove_threat':
        if (typeof payload.externalId === 'string') this.removedThreats.add(payload.externalId);
        return { status: 'completed', exitCode: 0 };
      case 'quarantine_threat':
      case 'restore_threat':
        return { status: 'completed', exitCode: 0 };
      case 'set_auto_update':
        this.autoUpdate = payload.enabled !== false;
        return { status: 'completed', exitCode: 0, result: { autoUpdate: this.autoUpdate } };
      default:
        return { status: 'failed', exitCode: 127, stderr: `unsupported command type: ${command.type}\n` };
    }
  }

  /**
   * Deterministic fake output: `echo` lines print their text, `exit N` sets the exit code, and a
   * digest of the script and parameters closes the output, so the same script gives the same result.
   */
  private runScript(payload: Record<string, unknown>): CommandResult {
    const script = typeof payload.script === 'string' ? payload.script : typeof payload.content === 'string' ? payload.content : JSON.stringify(payload);
    const lines: string[] = [];
    let exitCode = 0;
    for (const line of script.split(/\r?\n/)) {
      const echo = /^\s*(?:echo|Write-Output|Write-Host)\s+["']?(.*?)["']?\s*$/i.exec(line);
      if (echo) lines.push(echo[1]!);
      const exit = /^\s*exit\s+(\d+)\s*$/i.exec(line);
      if (exit) {
        exitCode = Number(exit[1]);
        break;
      }
    }
    const digest = crypto.createHash('sha256').update(JSON.stringify(payload)).digest('hex').slice(0, 12);
    lines.push(`[simulated on ${this.hostname}: ${script.length} bytes, sha256 ${digest}]`);
    return {
      status: exitCode === 0 ? 'completed' : 'failed',
      exitCode,
      stdout: `${lines.join('\n')}\n`,
      ...(exitCode === 0 ? {} : { stderr: `script exited with ${exitCode}\n` }),
      result: { digest },
    };
  }

  /** update-status `started`, a pause, the first heartbeat on the new version at once (no jitter), then `completed`. */
  private async selfUpdate(toVersion: string): Promise<void> {
    if (this.updating) return;
    this.updating = true;
    try {
      await this.post(`/agents/${this.agentId}/update-status`, { state: 'started', toVersion });
      await new Promise((resolve) => setTimeout(resolve, this.options.updateSeconds * 1000));
      if (this.state === 'stopped') return;
      this.version = toVersion;
      this.heartbeats += 1;
      const answer = await this.post<{ commands: Command[]; upgradeTo: { version: string } | null }>(`/agents/${this.agentId}/heartbeat`, this.heartbeatBody());
      await this.post(`/agents/${this.agentId}/update-status`, { state: 'completed', toVersion });
      this.onHeartbeatAnswer({ ...answer, upgradeTo: null });
    } finally {
      this.updating = false;
    }
  }

  /** Silent for `rebootSeconds` (no heartbeats, channel closed), then back with a heartbeat at once. */
  private reboot(): void {
    if (this.state !== 'running') return;
    this.state = 'rebooting';
    if (this.timer) clearTimeout(this.timer);
    this.socket?.close(1000, 'rebooting');
    this.options.log(`${this.hostname}: rebooting for ${this.options.rebootSeconds} s`);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.state !== 'rebooting') return;
      this.state = 'running';
      if (this.options.ws) this.connect();
      this.schedule(0);
    }, this.options.rebootSeconds * 1000);
  }

  // ── the WebSocket channel ─────────────────────────────────────────────────────────────────────

  private connect(): void {
    if (this.state !== 'running' || this.socket) return;
    const url = apiUrl(this.options.url, `/agents/${this.agentId}/ws`).replace(/^http/, 'ws');
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${this.token}` } });
    this.socket = socket;
    socket.on('open', () => (this.reconnectDelayMs = 1_000));
    socket.on('message', (data) => this.onMessage(data.toString()));
    socket.on('unexpected-response', (_req, res) => {
      if (res.statusCode === 401) {
        this.options.log(`${this.hostname}: channel refused (401); stopping`);
        this.halt();
      }
      socket.terminate();
    });
    socket.on('error', () => {});
    socket.on('close', (code, reason) => {
      if (this.socket === socket) this.socket = null;
      if (code === 4401 || code === 4410) {
        this.options.log(`${this.hostname}: channel closed (${code} ${reason.toString()}); stopping`);
        this.halt();
        return;
      }
      if (this.state !== 'running') return;
      const delay = this.reconnectDelayMs;
      this.reconnectDelayMs = Math.min(30_000, this.reconnectDelayMs * 2);
      setTimeout(() => this.connect(), delay).unref();
    });
  }

  private onMessage(text: string): void {
    let message: { type: string } & Record<string, any>;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    switch (message.type) {
      case 'command':
        this.receive(message.command as Command);
        break;
      case 'heartbeat_ack':
        this.onHeartbeatAnswer(message as never);
        break;
      case 'request':
        this.requests += 1;
        this.answer(message.requestId as string, message.method as string, (message.params ?? {}) as Record<string, unknown>);
        break;
      case 'error':
        this.options.log(`${this.hostname}: server error on the channel: ${message.code} ${message.message}`);
        break;
      default:
        break;
    }
  }

  /** The server's request/response calls (system tools and the like). */
  private answer(requestId: string, method: string, params: Record<string, unknown>): void {
    const reply = (ok: boolean, body: { result?: unknown; error?: string }) => {
      if (this.channelOpen) this.socket!.send(JSON.stringify({ type: 'response', requestId, ok, ...body }));
    };
    switch (method) {
      case 'ping':
        return reply(true, { result: { pong: true, echo: params } });
      case 'system.info':
        return reply(true, { result: { hostname: this.hostname, ...this.os, agentVersion: this.version, uptimeSeconds: Math.floor((Date.now() - this.bootedAt) / 1000) } });
      case 'system.processes':
        return reply(true, {
          result: {
            processes: ['init', 'sshd', 'agent', 'cron', 'nginx'].map((name, i) => ({ pid: 1 + i * 97, name, cpuPercent: Math.round(stable(`${this.machineId}:${name}`) * 50) / 10 })),
          },
        });
      default:
        return reply(false, { error: `unknown method: ${method}` });
    }
  }

  // ── simulated configuration (a test changes it) ───────────────────────────────────────────────

  /** The application is installed at `version` (reported from the next inventory on). */
  installSoftware(name: string, version: string): void {
    this.uninstalled.delete(name);
    this.installed.set(name, version);
  }

  /** The application is gone (reported from the next inventory on). */
  removeSoftware(name: string): void {
    this.installed.delete(name);
    this.uninstalled.add(name);
  }

  setService(name: string, running: boolean): void {
    this.services.set(name, running);
  }

  setRegistryValue(path: string, name: string, value: unknown): void {
    this.registry.set(`${path}\\${name}`, value);
  }

  setConfigValue(path: string, key: string, value: unknown): void {
    this.configFiles.set(`${path}:${key}`, value);
  }

  /** Sends the inventory now, as after a change on the machine. */
  async sendInventory(): Promise<void> {
    await this.post(`/agents/${this.agentId}/inventory`, this.inventory());
  }

  /** The services a machine of its OS runs when it comes: its agent's and the OS's usual ones. */
  private serviceRunning(name: string): boolean {
    const usual = { windows: ['WinDefend', 'wuauserv', 'EventLog'], macos: ['com.apple.sshd', 'com.apple.syslogd'], linux: ['sshd', 'cron', 'systemd-journald'] }[this.os.osType];
    return this.services.get(name) ?? usual.includes(name);
  }

  /** One check of a `policy_check`: passed, and what the machine has (values compared as text, as read from the registry or file). */
  private policyCheck(check: Record<string, unknown>): { ruleIndex: unknown; passed: boolean; actual?: unknown } {
    const { ruleIndex } = check;
    switch (check.type) {
      case 'service_running': {
        const running = this.serviceRunning(String(check.name));
        return { ruleIndex, passed: running, actual: running ? 'running' : 'stopped' };
      }
      case 'registry_value':
      case 'config_file': {
        const actual = check.type === 'registry_value' ? this.registry.get(`${String(check.path)}\\${String(check.name)}`) : this.configFiles.get(`${String(check.path)}:${String(check.key)}`);
        return { ruleIndex, passed: actual !== undefined && String(actual) === String(check.expected), ...(actual !== undefined && { actual }) };
      }
      default:
        return { ruleIndex, passed: false };
    }
  }

  // ── simulated facts ───────────────────────────────────────────────────────────────────────────

  private hardware() {
    const s = (what: string) => stable(`${this.machineId}:${what}`);
    return {
      manufacturer: ['Dell Inc.', 'Lenovo', 'HP', 'Apple'][Math.floor(s('vendor') * 4)],
      model: `Model ${Math.floor(s('model') * 900) + 100}`,
      serialNumber: crypto.createHash('sha256').update(this.machineId).digest('hex').slice(0, 12).toUpperCase(),
      cpu: { model: 'Simulated CPU', cores: [2, 4, 8, 16][Math.floor(s('cores') * 4)] },
      ramBytes: [8, 16, 32, 64][Math.floor(s('ram') * 4)]! * 1024 ** 3,
    };
  }

  /** The operating system's one update, missing on about one machine in five. */
  private patch() {
    const status = (this.patchInstalled ?? stable(`${this.machineId}:patched`) < 0.8) ? 'installed' : 'missing';
    const kb = `KB${5030000 + Math.floor(stable(`${this.machineId}:kb`) * 1000)}`;
    if (this.os.osType === 'windows') return { source: 'microsoft', externalId: kb, kbNumber: kb, title: 'Simulated cumulative update', severity: 'important', status };
    if (this.os.osType === 'macos') return { source: 'apple', externalId: 'macos-14.5', title: 'Simulated macOS update', severity: 'important', status };
    return { source: 'linux', externalId: 'openssl-3.0.13', packageName: 'openssl', version: '3.0.13', title: 'Simulated openssl update', severity: 'critical', status };
  }

  /** The antivirus's detections: about one machine in six has one, until it is removed. */
  private threats() {
    const externalId = `sim-${crypto.createHash('md5').update(this.machineId).digest('hex').slice(0, 8)}`;
    if (stable(`${this.machineId}:infected`) >= 0.16 || this.removedThreats.has(externalId)) return [];
    const path = this.os.osType === 'windows' ? 'C:\\Users\\Public\\Downloads\\eicar.com' : '/tmp/eicar.com';
    return [{ externalId, name: 'EICAR-Test-File (simulated)', severity: (['critical', 'high', 'medium', 'low'] as const)[Math.floor(stable(`${this.machineId}:severity`) * 4)], path }];
  }

  /** The inventory's `security` part: plausible protections, and now and then a threat. */
  private security() {
    const s = (what: string) => stable(`${this.machineId}:${what}`);
    const product = { windows: 'Microsoft Defender', macos: 'XProtect', linux: 'ClamAV' }[this.os.osType];
    return {
      antivirus: { product, enabled: s('av') < 0.95, upToDate: s('av-updated') < 0.85 },
      firewall: { enabled: s('firewall') < 0.8 },
      encryption: { enabled: s('encryption') < 0.7 },
      passwordPolicy: { minLength: [6, 8, 12, 14][Math.floor(s('pw-length') * 4)]!, complexity: s('pw-complexity') < 0.6 },
      localAdmins: s('admins') < 0.3 ? ['Administrator', 'support'] : ['Administrator'],
      threats: this.threats(),
    };
  }

  private inventory() {
    const packages = ['openssl', 'curl', 'git', 'python3', 'nodejs', 'chrome', '7zip', 'vlc', 'zoom', 'slack'];
    const software = packages
      .filter((name) => stable(`${this.machineId}:has:${name}`) < 0.7 && !this.uninstalled.has(name))
      .filter((name) => !this.installed.has(name))
      .map((name) => ({ name, version: `${Math.floor(stable(`${this.machineId}:v:${name}`) * 10) + 1}.${Math.floor(stable(`${name}:minor`) * 20)}.0`, vendor: 'Simulated' }))
      .concat([...this.installed].map(([name, version]) => ({ name, version, vendor: 'Simulated' })));
    return {
      hardware: { ...this.hardware(), disks: [{ mount: this.os.osType === 'windows' ? 'C:' : '/', sizeBytes: 512 * 1024 ** 3, freeBytes: Math.floor(stable(`${this.machineId}:free`) * 400) * 1024 ** 3 }] },
      software,
      patches: [this.patch()],
      security: this.security(),
      network: [{ name: 'eth0', mac: `02:00:${crypto.createHash('md5').update(this.machineId).digest('hex').slice(0, 8).match(/../g)!.join(':')}`, ipv4: `10.0.${this.index >> 8}.${(this.index % 254) + 1}` }],
    };
  }

  /** Stops the agent for good (credentials refused, or the simulation ends). */
  private halt(): void {
    this.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.socket && this.socket.readyState !== WebSocket.CLOSED) this.socket.close(1000, 'stopping');
  }

  async stop(): Promise<void> {
    this.halt();
    await Promise.allSettled([...this.inFlight]);
    const socket = this.socket;
    if (socket && socket.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => (socket.terminate(), resolve()), 1_000);
        socket.once('close', () => (clearTimeout(timer), resolve()));
      });
    }
  }
}

/** Enrolls `devices` agents (a few at a time) and sets them running; `stop()` ends them all. */
export async function startSimulation(options: SimulationOptions): Promise<Simulation> {
  const resolved = {
    url: options.url,
    enrollmentKey: options.enrollmentKey,
    devices: options.devices,
    intervalSeconds: options.intervalSeconds,
    jitterSeconds: options.jitterSeconds ?? options.intervalSeconds,
    ws: options.ws ?? false,
    rebootSeconds: options.rebootSeconds ?? 30,
    updateSeconds: options.updateSeconds ?? 2,
    failInstallsPercent: options.failInstallsPercent ?? 0,
    prefix: options.prefix ?? 'sim',
    credentials: options.credentials ?? inProcess,
    failing: options.failing ?? { types: [], share: 0 },
    log: options.log ?? (() => {}),
  };
  const agents = Array.from({ length: options.devices }, (_, i) => new SimulatedAgent(resolved, i));
  const queue = [...agents];
  const failures: Error[] = [];
  await Promise.all(
    Array.from({ length: Math.min(20, agents.length) }, async () => {
      for (let agent = queue.shift(); agent; agent = queue.shift()) {
        await agent.start().catch((error: Error) => failures.push(error));
      }
    }),
  );
  const simulation: Simulation = {
    agents,
    stats() {
      const sum = (key: 'heartbeats' | 'commands' | 'requests') => agents.reduce((n, a) => n + a[key], 0);
      return {
        agents: agents.length,
        running: agents.filter((a) => a.state === 'running').length,
        heartbeats: sum('heartbeats'),
        commands: sum('commands'),
        requests: sum('requests'),
        channels: agents.filter((a) => a.channelOpen).length,
      };
    },
    stop: async () => {
      await Promise.all(agents.map((a) => a.stop()));
    },
  };
  if (failures.length > 0) {
    await simulation.stop();
    throw new Error(`enrollment failed for ${failures.length} of ${agents.length} agents: ${failures[0]!.message}`);
  }
  return simulation;
}

// ── set-up without a key: sign in, the "Simulated fleet" organization, an enrollment key ─────────

/** Why signing in did not give a session: the server is unreachable, refused the credentials, or wants a second factor. */
export class LoginError extends Error {
  constructor(
    readonly reason: 'unreachable' | 'refused' | 'mfa',
    message: string,
  ) {
    super(message);
  }
}

type SessionAuth =
  | { kind: 'bearer'; accessToken: string; refreshToken: string | null; expiresAt: number | null; lifetimeMs: number | null }
  | { kind: 'apiKey'; apiKey: string };

/** The token of a login or refresh answer, good for `expiresIn` seconds from now. */
function bearer(body: { accessToken: string; refreshToken?: string | null; expiresIn?: number | null }): SessionAuth {
  const lifetimeMs = body.expiresIn ? body.expiresIn * 1000 : null;
  return { kind: 'bearer', accessToken: body.accessToken, refreshToken: body.refreshToken ?? null, expiresAt: lifetimeMs === null ? null : Date.now() + lifetimeMs, lifetimeMs };
}

type TokenAnswer = { accessToken?: string; refreshToken?: string; expiresIn?: number; mfaRequired?: boolean; code?: string; message?: string } | null;

/**
 * How the simulator calls the API as a user: a password login (whose access token is refreshed with
 * its refresh token when it runs out), or a fixed access token or API key (`rmm_…`) from `--token`.
 * REST over fetch only; no server code.
 */
export class ApiSession {
  private refreshing: Promise<void> | null = null;

  private constructor(
    readonly url: string,
    private auth: SessionAuth,
  ) {}

  /** `POST /auth/login`. A refusal, an account with MFA on and an unreachable server are LoginErrors. */
  static async login(url: string, email: string, password: string): Promise<ApiSession> {
    const answer = await send(url, 'POST', '/auth/login', { email, password });
    const body = answer.body as TokenAnswer;
    if (answer.ok && body?.mfaRequired) {
      throw new LoginError('mfa', `${email} has multi-factor authentication on: the simulator cannot answer the second step.`);
    }
    if (!answer.ok || !body?.accessToken) {
      const why = answer.status === 401 ? 'wrong email or password, or the account is locked out or cannot sign in with a password' : `HTTP ${answer.status} ${body?.code ?? ''} ${body?.message ?? ''}`.trim();
      throw new LoginError('refused', `Signing in as ${email} at ${url} failed: ${why}.`);
    }
    return new ApiSession(url, bearer({ ...body, accessToken: body.accessToken }));
  }

  /** An access token (refreshed by nobody: it works until it expires) or an API key (`rmm_…`). */
  static fromToken(url: string, token: string): ApiSession {
    const value = token.replace(/^Bearer\s+/i, '').trim();
    return new ApiSession(url, value.startsWith('rmm_') ? { kind: 'apiKey', apiKey: value } : { kind: 'bearer', accessToken: value, refreshToken: null, expiresAt: null, lifetimeMs: null });
  }

  /** Whether a refused or expired access token can be replaced (a password login can, a fixed token cannot). */
  get renewable(): boolean {
    return this.auth.kind === 'bearer' && this.auth.refreshToken !== null;
  }

  /** The access token is refused or has expired: the next call refreshes it first. */
  expire(): void {
    if (this.auth.kind === 'bearer' && this.auth.refreshToken) this.auth.expiresAt = 0;
  }

  /** Refreshes the access token when a quarter of its life (at most a minute) is left; one refresh at a time (a refresh token is used once). */
  private async fresh(): Promise<void> {
    const auth = this.auth;
    if (auth.kind !== 'bearer' || !auth.refreshToken || auth.expiresAt === null) return;
    if (auth.expiresAt - Date.now() > Math.min(60_000, (auth.lifetimeMs ?? 0) / 4)) return;
    this.refreshing ??= (async () => {
      try {
        const answer = await send(this.url, 'POST', '/auth/refresh', { refreshToken: auth.refreshToken });
        const body = answer.body as TokenAnswer;
        if (!answer.ok || !body?.accessToken || !body.refreshToken) throw new LoginError('refused', `The session could not be renewed (HTTP ${answer.status}): sign in again.`);
        this.auth = bearer({ ...body, accessToken: body.accessToken });
      } finally {
        this.refreshing = null;
      }
    })();
    await this.refreshing;
  }

  /** graphql-ws `connection_init` payload with the credentials. */
  async connectionParams(): Promise<Record<string, string>> {
    await this.fresh();
    return this.auth.kind === 'apiKey' ? { apiKey: this.auth.apiKey } : { authorization: `Bearer ${this.auth.accessToken}` };
  }

  /** A REST call under `/api/v1` with the credentials; a non-2xx answer is an ApiError with the server's code and message. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    await this.fresh();
    const headers: Record<string, string> = this.auth.kind === 'apiKey' ? { 'x-api-key': this.auth.apiKey } : { authorization: `Bearer ${this.auth.accessToken}` };
    return callApi<T>(this.url, method, path, body, headers);
  }
}

export const FLEET_NAME = 'Simulated fleet';
const KEY_NAME = 'simulator';

interface Fleet {
  orgId: string;
  orgName: string;
  /** null: the caller's own partner could not be read */
  partnerId: string | null;
  /** the enrollment key, shown by the server this once */
  enrollmentKey: string;
  enrollmentKeyId: string;
  /** what this call created (false: found and reused; the key then rotated) */
  created: { partner: boolean; organization: boolean; key: boolean };
}

interface Named {
  id: string;
  name: string;
}

/** Looks an entity up by exact name through a list route's `search` (a case-insensitive "contains"). */
async function findByName(session: ApiSession, path: string, name: string, query: Record<string, string> = {}): Promise<Named | null> {
  const params = new URLSearchParams({ ...query, search: name, limit: '500' });
  const page = await session.request<{ data: Named[] }>('GET', `${path}?${params}`);
  return page.data.find((item) => item.name === name) ?? null;
}

type KeyView = { id: string; name: string; siteId: string | null; deviceId: string | null; expiresAt: string | null; maxUsage: number | null };

/**
 * The organization's "simulator" enrollment key as an earlier run left it (no site, expiry or usage
 * limit) rotated, so its new value can be shown and keys do not pile up run after run (the previous
 * value stops working; devices enrolled with it keep their own tokens); else a new one.
 */
async function simulatorKey(session: ApiSession, orgId: string): Promise<{ id: string; key: string; created: boolean }> {
  for (let page = 1; ; page++) {
    const keys = await session.request<{ data: KeyView[]; pagination: { limit: number; total: number } }>('GET', `/enrollment-keys?orgId=${orgId}&limit=500&page=${page}`);
    const earlier = keys.data.find((k) => k.name === KEY_NAME && k.siteId === null && k.deviceId === null && k.expiresAt === null && k.maxUsage === null);
    if (earlier) return { ...(await session.request<{ id: string; key: string }>('POST', `/enrollment-keys/${earlier.id}/rotate`)), created: false };
    if (page * keys.pagination.limit >= keys.pagination.total) break;
  }
  return { ...(await session.request<{ id: string; key: string }>('POST', '/enrollment-keys', { name: KEY_NAME, orgId })), created: true };
}

/**
 * What `npm run simulate` without `--key` does before enrolling: finds (by name) or creates the
 * partner and the organization "Simulated fleet" and gets an enrollment key "simulator" there (no
 * expiry, no usage limit; keys are shown once, so an earlier run's is rotated). A platform
 * administrator gets both; a partner user the organization in their own partner; an organization
 * user their own organization. No step needs an MFA session.
 */
export async function prepareFleet(session: ApiSession, options: { name?: string } = {}): Promise<Fleet> {
  const name = options.name ?? FLEET_NAME;
  const tenancy = await session.request<{ scope: 'system' | 'partner' | 'organization'; partner: Named | null; organizations: { data: Named[] } }>('GET', '/orgs/?limit=1');
  const created = { partner: false, organization: false };
  let partnerId: string | null = null;
  let org: Named | null;
  if (tenancy.scope === 'organization') {
    org = tenancy.organizations.data[0] ?? null;
    if (!org) throw new ApiError(404, 'NOT_FOUND', 'This account belongs to an organization it cannot read (it needs organizations:read).');
  } else {
    if (tenancy.scope === 'system') {
      let partner = await findByName(session, '/orgs/partners', name);
      if (!partner) {
        partner = await session.request<Named>('POST', '/orgs/partners', { name });
        created.partner = true;
      }
      partnerId = partner.id;
    } else {
      partnerId = tenancy.partner?.id ?? null;
    }
    org = await findByName(session, '/orgs/organizations', name, partnerId ? { partnerId } : {});
    if (!org) {
      org = await session.request<Named>('POST', '/orgs/organizations', { name, ...(partnerId ? { partnerId } : {}) });
      created.organization = true;
    }
  }
  const key = await simulatorKey(session, org.id);
  return { orgId: org.id, orgName: org.name, partnerId, enrollmentKey: key.key, enrollmentKeyId: key.id, created: { ...created, key: key.created } };
}

// ── --watch: deviceStatusChanged over graphql-ws ─────────────────────────────────────────────────

export interface DeviceStatusChange {
  deviceId: string;
  orgId: string;
  hostname: string;
  previousStatus: string | null;
  status: string;
  lastSeenAt: string | null;
}

/** The subscription `--watch` runs, with `$orgId` (null or absent: every organization the caller sees). */
export const DEVICE_STATUS_SUBSCRIPTION = 'subscription DeviceStatus($orgId: ID) { deviceStatusChanged(orgId: $orgId) { deviceId orgId hostname previousStatus status lastSeenAt } }';

/** The GraphQL WebSocket endpoint of a server root URL. */
function graphqlWsUrl(url: string): string {
  return `${url.replace(/\/+$/, '').replace(/^http/, 'ws')}/graphql`;
}

/** A ready-to-paste subscription for the organization, and how to connect, for any graphql-ws client. */
export function subscriptionHelp(url: string, orgId: string): string {
  return [
    `Live status changes from any graphql-ws client: ${graphqlWsUrl(url)}, connection_init payload {"authorization": "Bearer <access token>"}`,
    `  subscription {`,
    `    deviceStatusChanged(orgId: "${orgId}") { deviceId hostname previousStatus status lastSeenAt }`,
    `  }`,
  ].join('\n');
}

/** `<time> <hostname> <previous> → <status>`; a new device's previous status reads `new`. */
function formatStatusChange(change: DeviceStatusChange, at: Date = new Date()): string {
  return `${at.toISOString()} ${change.hostname} ${change.previousStatus ?? 'new'} → ${change.status}`;
}

interface WatchOptions {
  /** the server's root URL */
  url: string;
  session: ApiSession;
  /** only this organization's devices (default: every organization the caller sees) */
  orgId?: string | null;
  /** each change as a line (formatStatusChange); default: standard output */
  print?: (line: string) => void;
  /** connection trouble and the subscription's end, as lines (default: standard error) */
  report?: (line: string) => void;
}

export interface Watch {
  /** settles when the first connection is acknowledged (the subscription is sent right after), or rejects when it cannot be */
  ready: Promise<void>;
  stop(): Promise<void>;
}

type CloseLike = { code: number; reason: string };
const isClose = (value: unknown): value is CloseLike => typeof value === 'object' && value !== null && 'code' in value && 'reason' in value;

function describeFailure(error: unknown): string {
  if (Array.isArray(error)) return error.map((e: { message?: string; extensions?: { code?: string } }) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}`).join('; ');
  if (isClose(error)) return `connection closed (${error.code}${error.reason ? ` ${error.reason}` : ''})`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Subscribes to `deviceStatusChanged` and prints one line per change. The connection is kept up:
 * after a drop it reconnects with a growing delay (0.5 s doubling to 30 s); when the server closes
 * it because the access token expired (4403), a password session is refreshed and reconnects, while
 * a fixed `--token` ends the watch. Changes made while disconnected are not replayed.
 */
export function watchDeviceStatus(options: WatchOptions): Watch {
  const print = options.print ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const report = options.report ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const { session } = options;
  let connected = false;
  let refusals = 0;
  let stopped = false;
  let ended = false;
  let settle: { resolve: () => void; reject: (error: Error) => void };
  const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  ready.catch(() => {});
  /** The subscription is over for good: said once (unless stop() ended it). */
  const end = (message: string) => {
    settle.reject(new Error(message));
    if (ended || stopped) return;
    ended = true;
    report(`${new Date().toISOString()} ${message}`);
  };
  const client: Client = createClient({
    url: graphqlWsUrl(options.url),
    webSocketImpl: WebSocket,
    connectionParams: () => session.connectionParams(),
    retryAttempts: Number.MAX_SAFE_INTEGER,
    retryWait: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 500 * 2 ** retries))),
    // 4403: the token expired or is refused. A password session refreshes it (twice at most in a row); a fixed token cannot.
    shouldRetry: (event) => {
      if (!isClose(event)) return false;
      if (event.code !== 4403) return true;
      session.expire();
      return session.renewable && ++refusals <= 2;
    },
    on: {
      connected: () => {
        refusals = 0;
        if (connected) report(`${new Date().toISOString()} watch: reconnected`);
        connected = true;
        settle.resolve();
      },
      closed: (event) => {
        if (stopped || !connected || !isClose(event) || event.code === 1000 || (event.code === 4403 && !session.renewable)) return;
        report(`${new Date().toISOString()} watch: ${describeFailure(event)}; reconnecting`);
      },
    },
  });
  const unsubscribe = client.subscribe<{ deviceStatusChanged: DeviceStatusChange }>(
    { query: DEVICE_STATUS_SUBSCRIPTION, variables: { orgId: options.orgId ?? null } },
    {
      next: (result) => {
        // The server answers a refused subscribe (an organization the caller cannot see, …) with a result carrying errors, then completes it.
        if (result.errors?.length) {
          end(`watch stopped: ${describeFailure(result.errors)}`);
          return;
        }
        const change = result.data?.deviceStatusChanged;
        if (change) print(formatStatusChange(change));
      },
      error: (error) => end(`watch stopped: ${describeFailure(error)}${isClose(error) && error.code === 4403 ? ' — the credentials were refused or expired' : ''}`),
      complete: () => end('watch stopped: the server ended the subscription'),
    },
  );
  return {
    ready,
    async stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      await client.dispose();
    },
  };
}
