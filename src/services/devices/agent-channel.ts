import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { agentContext } from '../../auth/agent.js';
import { RequestContext, type AgentIdentity } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { AppError, badRequest, internalError, toAppError } from '../../errors.js';
import { DOMAIN_EVENT_TOPIC } from '../../events/dispatcher.js';
import type { DomainEvent } from '../../events/types.js';
import type { AgentChannels, AgentResponse, Runtime } from '../../runtime.js';
import { parseInput } from '../../validation.js';
import { heartbeat, markSeen, reportCommandResult, touchPresence, type Presence } from './agents.js';
import { boundedJson, JsonObjectSchema } from '../shared/json.js';
import { claimCommands, COMMANDS_QUEUED_TOPIC, devicesWithPendingCommands, releaseCommands, type CommandsQueued } from './device-commands.js';
import { accessibleDevice } from './devices.js';
import { BUS, ChannelBus, type Accepted, type Connected, type ForwardedRequest, type ForwardedResponse } from './agent-channel-bus.js';

// The agent channel (docs/agent-protocol.md, "WebSocket channel"): one WebSocket per agent, held by
// one server instance. Commands are pushed the moment they commit, requests go to the agent and its
// responses come back, wherever the caller and the channel are: instances talk over LISTEN/NOTIFY
// (the runtime's pubsub). The socket itself is src/http/agent-channel.ts's; this is the protocol.

export { MAX_CHANNEL_MESSAGE_BYTES } from './agent-channel-bus.js';

/** Close codes the server uses (1009 for an oversized message comes from the WebSocket layer). */
const CHANNEL_CLOSE = {
  shutdown: { code: 1001, reason: 'Server shutting down' },
  credentialsReplaced: { code: 4401, reason: 'Agent credentials replaced' },
  replaced: { code: 4409, reason: 'Replaced by a newer connection' },
  decommissioned: { code: 4410, reason: 'Device decommissioned' },
  overloaded: { code: 4429, reason: 'Too many messages in flight' },
} as const;
type Close = (typeof CHANNEL_CLOSE)[keyof typeof CHANNEL_CLOSE];

const AGENT_NOT_CONNECTED = 'Agent not connected';
const notConnected = (message = AGENT_NOT_CONNECTED) => new AppError(409, 'AGENT_NOT_CONNECTED', message);
const timedOut = (timeoutMs: number) => new AppError(504, 'AGENT_TIMEOUT', `The agent did not answer within ${timeoutMs} ms`);

/** Messages of one channel handled one after the other; more than this waiting closes it. */
const MAX_BACKLOG = 100;
/** Requests forwarded to other instances carry at most this much params (the bus is NOTIFY). */
const MAX_PARAMS_BYTES = 64 * 1024;
const DEFAULT_CALL_TIMEOUT_MS = 30_000;
const MAX_CALL_TIMEOUT_MS = 10 * 60_000;

// ── what the agent sends ────────────────────────────────────────────────────────────────────────

const ResponseMessageSchema = z
  .object({
    type: z.literal('response'),
    requestId: z.string().max(100),
    ok: z.boolean(),
    result: boundedJson(z.unknown()).optional(),
    error: boundedJson(z.unknown()).optional(),
  })
  .strict();

/** The socket as the channel uses it (a `ws` WebSocket is one). */
export interface AgentSocket {
  readonly readyState: number;
  send(data: string, callback?: (error?: Error) => void): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  ping(): void;
}

const OPEN = 1;

/** One open channel on this instance. */
export class AgentConnection {
  readonly id = randomUUID();
  readonly openedAt = Date.now();
  /** answered the last ping (or sent something) since the previous presence tick */
  alive = true;
  closed = false;
  backlog = 0;
  /** messages are handled in order, one at a time */
  work: Promise<void> = Promise.resolve();
  /** pushes too, on their own line so a slow message does not hold a command back */
  pushes: Promise<void> = Promise.resolve();
  pushScheduled = false;
  private socketClosed!: () => void;
  readonly gone = new Promise<void>((resolve) => (this.socketClosed = resolve));

  constructor(
    readonly deviceId: string,
    readonly agentId: string,
    /** the token it opened with (its SHA-256): the agent's calls over the channel claim it, and are verified, each time */
    readonly tokenHash: string,
    readonly socket: AgentSocket,
    readonly meta: { ip: string | null; userAgent: string | null },
  ) {}

  /** The socket has closed (the WebSocket layer says so). */
  markGone(): void {
    this.socketClosed();
  }
}

interface PendingCall {
  deviceId: string;
  accepted: boolean;
  deadline: number;
  timeoutMs: number;
  timer: NodeJS.Timeout;
  resolve: (response: AgentResponse) => void;
  reject: (error: AppError) => void;
}

interface SentRequest {
  connectionId: string;
  timer: NodeJS.Timeout;
  /** hands the agent's answer (null: the channel closed first) to whoever asked */
  reply: (response: AgentResponse | null) => void;
}

/**
 * This instance's agent channels: who is connected here, their presence, pushes and requests, and
 * the bus to the other instances. Implements the runtime's `AgentChannels`.
 */
export class AgentChannelHub implements AgentChannels {
  readonly instanceId = randomUUID();
  private readonly connections = new Map<string, AgentConnection>();
  /** calls made from this instance, waiting for their answer */
  private readonly calls = new Map<string, PendingCall>();
  /** requests this instance sent down one of its channels, waiting for the agent */
  private readonly sent = new Map<string, SentRequest>();
  private readonly bus = new ChannelBus(
    () => this.rt,
    () => this.instanceId,
    (topic, payload) => (topic === BUS.request ? this.onForwardedRequest(payload as ForwardedRequest) : this.onForwardedResponse(payload as ForwardedResponse)),
  );
  private readonly offs: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private stopped = false;

  constructor(private readonly runtime: () => Runtime) {}

  private get rt(): Runtime {
    return this.runtime();
  }

  /** ping and presence interval: a third of DEVICE_OFFLINE_AFTER_SECONDS (at most 30 s), so the sweep never finds an open channel's device silent */
  presenceIntervalMs(): number {
    return Math.max(250, Math.min(30_000, Math.floor((this.rt.config.devices.offlineAfterSeconds * 1000) / 3)));
  }

  start(): void {
    const { pubsub } = this.rt;
    this.offs.push(
      pubsub.on(COMMANDS_QUEUED_TOPIC, (payload) => {
        const conn = this.connections.get((payload as CommandsQueued).deviceId);
        if (conn) this.schedulePush(conn);
      }),
      pubsub.on(DOMAIN_EVENT_TOPIC, (payload) => this.onDomainEvent(payload as DomainEvent)),
      pubsub.on(BUS.connected, (payload) => this.onConnectedElsewhere(payload as Connected)),
      pubsub.on(BUS.request, (payload) => this.onForwardedRequest(payload as ForwardedRequest)),
      pubsub.on(BUS.accepted, (payload) => this.onAccepted(payload as Accepted)),
      pubsub.on(BUS.response, (payload) => this.onForwardedResponse(payload as ForwardedResponse)),
      this.bus.listen(),
    );
    this.timer = setInterval(() => void this.tick(), this.presenceIntervalMs());
    this.timer.unref();
  }

  /** Closes every channel (1001: connect again, to another instance), fails the calls still waiting, and waits for the work under way. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const off of this.offs.splice(0)) off();
    const open = [...this.connections.values()];
    for (const conn of open) this.close(conn, CHANNEL_CLOSE.shutdown);
    for (const [requestId, call] of this.calls) {
      clearTimeout(call.timer);
      this.calls.delete(requestId);
      call.reject(new AppError(503, 'SERVICE_UNAVAILABLE', 'The server is shutting down'));
    }
    this.bus.clear();
    // A peer that does not answer the close frame is cut off.
    const grace = new Promise<void>((resolve) => setTimeout(resolve, 1_000).unref());
    await Promise.race([Promise.all(open.map((c) => c.gone)), grace]);
    for (const conn of open) conn.socket.terminate();
    await Promise.allSettled(open.flatMap((c) => [c.work, c.pushes]));
  }

  connectedHere(deviceId: string): boolean {
    return this.connections.has(deviceId);
  }

  // ── channels on this instance ─────────────────────────────────────────────────────────────────

  /**
   * A channel the WebSocket layer has authenticated (`authenticateAgent`, src/auth/agent.ts) and opened. A channel of
   * the same agent already open, here or on another instance, is closed (4409); the device is seen
   * (online if it was not) and its pending commands are pushed.
   */
  attach(agent: AgentIdentity, socket: AgentSocket, meta: { ip: string | null; userAgent: string | null }): AgentConnection {
    const conn = new AgentConnection(agent.deviceId, agent.agentId, agent.tokenHash, socket, meta);
    if (this.stopped) {
      socket.close(CHANNEL_CLOSE.shutdown.code, CHANNEL_CLOSE.shutdown.reason);
      conn.closed = true;
      return conn;
    }
    const previous = this.connections.get(agent.deviceId);
    if (previous) this.close(previous, CHANNEL_CLOSE.replaced);
    this.connections.set(agent.deviceId, conn);
    this.bus.send(BUS.connected, { deviceId: agent.deviceId, connectionId: conn.id, instanceId: this.instanceId, openedAt: conn.openedAt } satisfies Connected, null);
    this.rt.log.debug({ deviceId: agent.deviceId, connectionId: conn.id }, 'agent channel opened');
    this.enqueue(conn, async () => {
      if (await this.checkPresence(conn)) this.schedulePush(conn);
    });
    return conn;
  }

  /** The socket closed (whoever closed it): forget the channel; requests waiting on it fail at once. */
  socketClosed(conn: AgentConnection): void {
    this.detach(conn);
    conn.markGone();
  }

  /** The agent answered a ping. */
  pong(conn: AgentConnection): void {
    conn.alive = true;
  }

  /** A frame from the agent. Invalid ones are answered with an `error` message; the channel stays open. */
  receive(conn: AgentConnection, data: Buffer | string, isBinary: boolean): void {
    // A socket's message handler must not throw: that would bring the whole process down.
    try {
      this.dispatch(conn, data, isBinary);
    } catch (error) {
      this.rt.log.error({ err: (error as Error).message, deviceId: conn.deviceId }, 'agent channel message failed');
      this.sendError(conn, internalError());
    }
  }

  private dispatch(conn: AgentConnection, data: Buffer | string, isBinary: boolean): void {
    if (conn.closed) return;
    conn.alive = true;
    if (isBinary) return this.sendError(conn, badRequest('Messages are JSON text frames'));
    let message: unknown;
    try {
      message = JSON.parse(data.toString());
    } catch {
      return this.sendError(conn, badRequest('Message is not valid JSON'));
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message) || typeof (message as { type?: unknown }).type !== 'string') {
      return this.sendError(conn, badRequest('A message is a JSON object with a string `type`'));
    }
    const typed = message as { type: string } & Record<string, unknown>;
    if (typed.type === 'response') return this.onAgentResponse(conn, typed);
    if (typed.type !== 'heartbeat' && typed.type !== 'result') {
      return this.sendError(conn, badRequest(`Unknown message type "${typed.type.slice(0, 50)}"; expected heartbeat, result or response`));
    }
    if (conn.backlog >= MAX_BACKLOG) return this.close(conn, CHANNEL_CLOSE.overloaded);
    this.enqueue(conn, () => this.handle(conn, typed));
  }

  private enqueue(conn: AgentConnection, task: () => Promise<void>): void {
    conn.backlog += 1;
    conn.work = conn.work
      .then(task)
      .catch((error: Error) => this.rt.log.error({ err: error.message, deviceId: conn.deviceId }, 'agent channel work failed'))
      .finally(() => {
        conn.backlog -= 1;
      });
  }

  /** `heartbeat` and `result`: the same services as the REST routes, claiming the channel's agent and token. */
  private async handle(conn: AgentConnection, message: { type: string } & Record<string, unknown>): Promise<void> {
    if (conn.closed) return;
    const ctx = agentContext(this.rt, { agentId: conn.agentId, tokenHash: conn.tokenHash }, conn.meta);
    const { type, ...body } = message;
    const commandId = type === 'result' ? body.commandId : undefined;
    try {
      if (type === 'heartbeat') {
        const answer = await heartbeat(ctx, body as never);
        const claimed = answer.commands.map((c) => c.id);
        const delivered = await new Promise<boolean>((resolve) => this.send(conn, { type: 'heartbeat_ack', ...answer }, (error) => resolve(!error)));
        // The channel closed under the answer: its commands go back to pending, as a push's do.
        if (!delivered && claimed.length > 0) await releaseCommands(RequestContext.system(this.rt, 'agent-channel.release'), conn.deviceId, claimed);
      } else {
        delete body.commandId;
        if (typeof commandId !== 'string') throw badRequest('commandId: a command id is required', [{ path: 'commandId', message: 'required' }]);
        await reportCommandResult(ctx, commandId, body as never);
        this.send(conn, { type: 'result_ack', commandId });
      }
    } catch (error) {
      const { error: appError, expected } = toAppError(error);
      if (!expected) this.rt.log.error({ err: (error as Error).message, deviceId: conn.deviceId, type }, 'agent channel message failed');
      this.sendError(conn, appError, { replyTo: type, ...(typeof commandId === 'string' ? { commandId } : {}) });
      // The token stopped working under the open channel: close it with the reason.
      if (appError.status === 401) await this.checkPresence(conn);
    }
  }

  /**
   * The device seen through its open channel: online if it was offline. A token replaced since
   * (re-enrollment) or a decommissioned device closes the channel. Answers whether it stays open.
   */
  private async checkPresence(conn: AgentConnection): Promise<boolean> {
    if (conn.closed) return false;
    const presence: Presence = await markSeen(RequestContext.system(this.rt, 'agent-channel.presence'), conn.deviceId, conn.tokenHash);
    if (presence === 'seen') return true;
    this.close(conn, presence === 'replaced' ? CHANNEL_CLOSE.credentialsReplaced : CHANNEL_CLOSE.decommissioned);
    return false;
  }

  /**
   * Every presence interval: a channel that did not answer the previous ping is cut off; the others
   * are pinged and their devices' `lastSeenAt` refreshed in one statement. Devices with commands
   * still pending (a notification lost while the listener reconnected) get a push.
   */
  private async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      const live: AgentConnection[] = [];
      for (const conn of this.connections.values()) {
        if (!conn.alive) {
          this.rt.log.debug({ deviceId: conn.deviceId }, 'agent channel unresponsive; terminated');
          this.detach(conn);
          conn.socket.terminate();
          continue;
        }
        conn.alive = false;
        try {
          conn.socket.ping();
        } catch {
          // closing already: its close event detaches it
        }
        live.push(conn);
      }
      if (live.length === 0) return;
      const ctx = RequestContext.system(this.rt, 'agent-channel.presence');
      const touched = await touchPresence(
        ctx,
        live.map((c) => ({ deviceId: c.deviceId, tokenHash: c.tokenHash })),
      );
      for (const conn of live) {
        if (!touched.has(conn.deviceId)) this.enqueue(conn, async () => void (await this.checkPresence(conn)));
      }
      const waiting = await devicesWithPendingCommands(ctx, live.map((c) => c.deviceId));
      for (const conn of live) if (waiting.has(conn.deviceId)) this.schedulePush(conn);
    } catch (error) {
      this.rt.log.warn({ err: (error as Error).message }, 'agent channel presence tick failed; the next one retries');
    } finally {
      this.ticking = false;
    }
  }

  /** Re-enrollment or decommissioning of a device with a channel here: re-check its token now rather than at the next tick. */
  private onDomainEvent(event: DomainEvent): void {
    if (event.type !== 'device.enrolled' && event.type !== 'device.decommissioned') return;
    const conn = this.connections.get((event.data as { deviceId: string }).deviceId);
    if (conn) this.enqueue(conn, async () => void (await this.checkPresence(conn)));
  }

  private onConnectedElsewhere(message: Connected): void {
    if (message.instanceId === this.instanceId) return;
    const conn = this.connections.get(message.deviceId);
    if (conn && conn.openedAt <= message.openedAt) this.close(conn, CHANNEL_CLOSE.replaced);
  }

  private close(conn: AgentConnection, why: Close): void {
    if (conn.closed) return;
    this.detach(conn);
    this.rt.log.debug({ deviceId: conn.deviceId, code: why.code }, 'agent channel closed by the server');
    conn.socket.close(why.code, why.reason);
  }

  private detach(conn: AgentConnection): void {
    if (conn.closed) return;
    conn.closed = true;
    if (this.connections.get(conn.deviceId) === conn) this.connections.delete(conn.deviceId);
    for (const [requestId, sent] of this.sent) {
      if (sent.connectionId !== conn.id) continue;
      clearTimeout(sent.timer);
      this.sent.delete(requestId);
      sent.reply(null);
    }
  }

  private send(conn: AgentConnection, message: Record<string, unknown>, onSent?: (error?: Error) => void): boolean {
    if (conn.closed || conn.socket.readyState !== OPEN) {
      onSent?.(new Error('channel closed'));
      return false;
    }
    conn.socket.send(JSON.stringify(message), onSent);
    return true;
  }

  private sendError(conn: AgentConnection, error: AppError, about: Record<string, unknown> = {}): void {
    this.send(conn, { type: 'error', ...about, ...error.toBody() });
  }

  // ── commands ──────────────────────────────────────────────────────────────────────────────────

  /** Claims and pushes the device's pending commands; a push asked for while one waits to start is the same push. */
  private schedulePush(conn: AgentConnection): void {
    if (conn.closed || conn.pushScheduled) return;
    conn.pushScheduled = true;
    conn.pushes = conn.pushes
      .then(async () => {
        conn.pushScheduled = false;
        await this.push(conn);
      })
      .catch((error: Error) => this.rt.log.error({ err: error.message, deviceId: conn.deviceId }, 'agent channel push failed'));
  }

  /**
   * The same claim as a heartbeat's (`for update skip locked`), so a command goes out once whoever
   * claims first; commands the socket could not take go back to `pending`.
   */
  private async push(conn: AgentConnection): Promise<void> {
    if (conn.closed) return;
    const ctx = RequestContext.system(this.rt, 'agent-channel.push');
    const commands = await claimCommands(ctx, conn.deviceId);
    const undelivered: string[] = [];
    await Promise.all(
      commands.map(
        (command) =>
          new Promise<void>((resolve) => {
            this.send(conn, { type: 'command', command }, (error) => {
              if (error) undelivered.push(command.id);
              resolve();
            });
          }),
      ),
    );
    if (undelivered.length > 0) await releaseCommands(ctx, conn.deviceId, undelivered);
  }

  // ── requests ──────────────────────────────────────────────────────────────────────────────────

  call(deviceId: string, method: string, params: Record<string, unknown>, timeoutMs: number): Promise<AgentResponse> {
    if (this.stopped) return Promise.reject(new AppError(503, 'SERVICE_UNAVAILABLE', 'The server is shutting down'));
    const requestId = randomUUID();
    const local = this.connections.get(deviceId);
    return new Promise<AgentResponse>((resolve, reject) => {
      const started = Date.now();
      const call: PendingCall = {
        deviceId,
        accepted: local !== undefined,
        deadline: started + timeoutMs,
        timeoutMs,
        // Not connected here: another instance must take it within the accept timeout.
        timer: setTimeout(() => this.expire(requestId), local ? timeoutMs : Math.min(timeoutMs, this.rt.tunables.agentChannel.acceptTimeoutMs)),
        resolve,
        reject,
      };
      this.calls.set(requestId, call);
      if (local) this.deliver(local, requestId, method, params, timeoutMs, (response) => this.settle(requestId, response));
      else this.bus.send(BUS.request, { deviceId, requestId, method, params, timeoutMs, from: this.instanceId } satisfies ForwardedRequest, null);
    });
  }

  /** Sends the request down the channel; `reply` gets the answer, or null when the channel cannot take it or closes first. */
  private deliver(conn: AgentConnection, requestId: string, method: string, params: Record<string, unknown>, timeoutMs: number, reply: (response: AgentResponse | null) => void): void {
    const sent: SentRequest = {
      connectionId: conn.id,
      reply,
      // The caller gives up at its own deadline; this only forgets the request a little later.
      timer: setTimeout(() => this.sent.delete(requestId), timeoutMs + 5_000),
    };
    sent.timer.unref();
    this.sent.set(requestId, sent);
    this.send(conn, { type: 'request', requestId, method, params, timeoutMs }, (error) => {
      if (!error || !this.sent.has(requestId)) return;
      clearTimeout(sent.timer);
      this.sent.delete(requestId);
      reply(null);
    });
  }

  private onAgentResponse(conn: AgentConnection, message: Record<string, unknown>): void {
    const parsed = ResponseMessageSchema.safeParse(message);
    if (!parsed.success) {
      const { error } = toAppError(parsed.error);
      return this.sendError(conn, error, { replyTo: 'response' });
    }
    const { requestId, ok, result, error } = parsed.data;
    const sent = this.sent.get(requestId);
    if (!sent || sent.connectionId !== conn.id) {
      return this.sendError(conn, new AppError(404, 'NOT_FOUND', 'No request is waiting for this response (answered already, or timed out)'), { replyTo: 'response', requestId });
    }
    clearTimeout(sent.timer);
    this.sent.delete(requestId);
    sent.reply({ ok, ...(result === undefined ? {} : { result }), ...(error === undefined ? {} : { error }) });
  }

  /** The answer to a call made here: null means the channel closed before the agent answered. */
  private settle(requestId: string, response: AgentResponse | null): void {
    const call = this.calls.get(requestId);
    if (!call) return;
    clearTimeout(call.timer);
    this.calls.delete(requestId);
    if (response) call.resolve(response);
    else call.reject(notConnected('Agent disconnected before answering'));
  }

  private expire(requestId: string): void {
    const call = this.calls.get(requestId);
    if (!call) return;
    this.calls.delete(requestId);
    const sent = this.sent.get(requestId);
    if (sent) {
      clearTimeout(sent.timer);
      this.sent.delete(requestId);
    }
    call.reject(call.accepted ? timedOut(call.timeoutMs) : notConnected());
  }

  private onForwardedRequest(message: ForwardedRequest): void {
    const conn = this.connections.get(message.deviceId);
    if (!conn || this.stopped) return;
    const { requestId, from } = message;
    this.deliver(conn, requestId, message.method, message.params, message.timeoutMs, (response) => {
      if (from === this.instanceId) this.settle(requestId, response);
      else this.bus.send(BUS.response, { to: from, requestId, response } satisfies ForwardedResponse, from);
    });
    if (from === this.instanceId) this.onAccepted({ to: from, requestId });
    else this.bus.send(BUS.accepted, { to: from, requestId } satisfies Accepted, from);
  }

  /** The instance holding the channel took the request: the call now waits up to its own deadline. */
  private onAccepted(message: Accepted): void {
    if (message.to !== this.instanceId) return;
    const call = this.calls.get(message.requestId);
    if (!call || call.accepted) return;
    call.accepted = true;
    clearTimeout(call.timer);
    call.timer = setTimeout(() => this.expire(message.requestId), Math.max(0, call.deadline - Date.now()));
  }

  private onForwardedResponse(message: ForwardedResponse): void {
    if (message.to === this.instanceId) this.settle(message.requestId, message.response);
  }
}

// ── the service function ────────────────────────────────────────────────────────────────────────

const AgentCallSchema = z
  .object({
    method: z
      .string()
      .regex(/^[a-z][a-z0-9_.]{0,99}$/, 'must be a method name such as system.processes'),
    params: JsonObjectSchema.refine((p) => Buffer.byteLength(JSON.stringify(p)) <= MAX_PARAMS_BYTES, { message: 'params must be at most 64 KiB' }),
    timeoutMs: z.number().int().min(1).max(MAX_CALL_TIMEOUT_MS).default(DEFAULT_CALL_TIMEOUT_MS),
  })
  .strict();

export interface CallAgentOptions {
  /** default 30 000, at most 10 minutes */
  timeoutMs?: number;
  /** what the caller needs on the device (default `devices:execute`) */
  permission?: Permission;
}

/**
 * A request/response call to the device's agent over its channel, wherever the channel is open
 * (any instance): resolves with the agent's `{ok, result?, error?}`. 409 AGENT_NOT_CONNECTED when
 * no channel is open (or it closes before the answer), 504 AGENT_TIMEOUT when the agent does not
 * answer within `timeoutMs`, 409 DEVICE_DECOMMISSIONED for a decommissioned device.
 */
export async function callAgent(ctx: RequestContext, deviceId: string, method: string, params: Record<string, unknown> = {}, options: CallAgentOptions = {}): Promise<AgentResponse> {
  const input = parseInput(AgentCallSchema, { method, params, timeoutMs: options.timeoutMs });
  const device = await accessibleDevice(ctx, deviceId, options.permission ?? 'devices:execute');
  if (device.status === 'decommissioned') throw new AppError(409, 'DEVICE_DECOMMISSIONED', 'The device is decommissioned');
  return ctx.runtime.agentChannels.call(device.id, input.method, input.params, input.timeoutMs);
}
