import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { agentContext, agentTokenHash, authenticateAgent, INVALID_AGENT_TOKEN, type AgentPrincipal } from '../auth/agent.js';
import { AppError, notFound, toAppError, unauthenticated } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { MAX_CHANNEL_MESSAGE_BYTES, type AgentChannelHub } from '../services/devices/agent-channel.js';
import { uuid } from '../validation.js';
import { clientMeta } from './request-context.js';

const CHANNEL_PATH = /^\/api\/v1\/agents\/([^/]+)\/ws$/;

export interface UpgradeRoute {
  /** whether this route serves upgrades to `pathname` */
  matches(pathname: string): boolean;
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** Answers an upgrade that is refused with a plain HTTP response in the API's error envelope. */
export function refuseUpgrade(socket: Duplex, error: AppError, headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(error.toBody());
  const lines = [
    `HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? 'Error'}`,
    'Connection: close',
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** 401 names the scheme; 503 (the database out of reach) tells the agent when to try again, as the heartbeat does. */
function refusalHeaders(error: AppError): Record<string, string> {
  if (error.status === 401) return { 'WWW-Authenticate': 'Bearer' };
  const retryAfter = (error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
  return error.status === 503 && retryAfter ? { 'Retry-After': String(retryAfter) } : {};
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 405: 'Method Not Allowed', 500: 'Internal Server Error', 503: 'Service Unavailable' };

/**
 * `GET /api/v1/agents/:agentId/ws` with `Authorization: Bearer <authToken>`: the agent's WebSocket
 * channel. The token is checked before the upgrade (401 in the error envelope, nothing else said);
 * the open channel belongs to the hub (src/services/agent-channel.ts). Frames over 1 MiB close it (1009).
 */
export function agentChannelRoute(runtime: Runtime, hub: AgentChannelHub): UpgradeRoute & { close(): void } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CHANNEL_MESSAGE_BYTES, perMessageDeflate: false, clientTracking: false });

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, agentId: string): Promise<void> {
    const tokenHash = agentTokenHash(req.headers.authorization);
    const meta = clientMeta(runtime, req);
    let agent: AgentPrincipal;
    try {
      if (!tokenHash) throw unauthenticated(INVALID_AGENT_TOKEN);
      agent = await authenticateAgent(agentContext(runtime, { agentId, tokenHash }, meta));
    } catch (error) {
      const { error: appError, expected } = toAppError(error);
      if (!expected) runtime.log.error({ err: (error as Error).message }, 'agent channel upgrade failed');
      return refuseUpgrade(socket, appError, refusalHeaders(appError));
    }
    if (socket.destroyed) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = hub.attach(agent.agent, ws, { ip: meta.ip, userAgent: meta.userAgent });
      ws.on('message', (data, isBinary) => hub.receive(conn, data as Buffer, isBinary));
      ws.on('pong', () => hub.pong(conn));
      ws.on('error', (error) => runtime.log.debug({ err: error.message, deviceId: conn.deviceId }, 'agent channel socket error'));
      ws.on('close', () => hub.socketClosed(conn));
    });
  }

  return {
    matches: (pathname) => CHANNEL_PATH.test(pathname),
    handle(req, socket, head) {
      socket.on('error', () => socket.destroy());
      const agentId = CHANNEL_PATH.exec((req.url ?? '').split('?')[0]!)?.[1] ?? '';
      if (req.method !== 'GET') return refuseUpgrade(socket, new AppError(405, 'METHOD_NOT_ALLOWED', 'The agent channel opens with GET'), { Allow: 'GET' });
      // A malformed agent id is 404, as on the REST routes.
      if (!uuid().safeParse(agentId).success) return refuseUpgrade(socket, notFound('Agent'));
      upgrade(req, socket, head, agentId).catch((error: Error) => {
        runtime.log.error({ err: error.message }, 'agent channel upgrade failed');
        socket.destroy();
      });
    },
    close: () => wss.close(),
  };
}
