import type { AlertChannelType, ChannelMessageKind } from '../../../entities/alert-channel.js';
import type { RequestContext } from '../../auth/context.js';
import { guardedRequest } from '../../net/outbound-guard.js';
import { deliverMail } from '../shared/mailer.js';
import { guardOptions } from '../webhooks/api.js';

/**
 * Each channel type's wire format: an email over SMTP, Slack's and Teams' incoming-webhook messages,
 * a generic JSON webhook, a PagerDuty Events API v2 event, an SMS provider call. Every HTTP request
 * goes through the outbound SSRF guard (checked before each attempt, sent to the checked addresses).
 */

/** What a message says; stored with the delivery, so a retry sends the same thing. */
export interface ChannelMessage {
  kind: ChannelMessageKind;
  orgId: string;
  alertId: string | null;
  title: string;
  message: string | null;
  severity: string;
  status: string;
  deviceId: string | null;
  ruleId: string | null;
  triggeredAt: string | null;
  /** escalations: which step of the policy (1-based) */
  escalationStep: number | null;
  timestamp: string;
}

/** A channel as a sender needs it: its shown config and its unsealed secret (URL or routing key). */
export interface SendableChannel {
  id: string;
  type: AlertChannelType;
  config: { to?: string[] };
  secret: string | null;
}

export class ChannelSendError extends Error {
  constructor(
    message: string,
    readonly responseStatus: number | null = null,
  ) {
    super(message);
    this.name = 'ChannelSendError';
  }
}

const REQUEST_TIMEOUT_MS = 15_000;
const SOURCE = 'rmm-service';

const HEADLINE: Record<ChannelMessageKind, string> = { triggered: 'Alert', escalated: 'Escalated alert', resolved: 'Resolved', test: 'Test', automation: 'Automation' };
// Slack attachment colours and Teams theme colours by severity.
const COLOURS: Record<string, string> = { critical: '#D32F2F', high: '#F57C00', medium: '#FBC02D', low: '#1976D2', info: '#607D8B' };
// PagerDuty knows four severities.
const PAGERDUTY_SEVERITY: Record<string, 'critical' | 'error' | 'warning' | 'info'> = { critical: 'critical', high: 'error', medium: 'warning', low: 'info', info: 'info' };

function headline(message: ChannelMessage): string {
  const step = message.kind === 'escalated' && message.escalationStep ? ` (step ${message.escalationStep})` : '';
  return `${HEADLINE[message.kind]}${step} [${message.severity.toUpperCase()}]: ${message.title}`;
}

function facts(message: ChannelMessage): { name: string; value: string }[] {
  const rows: [string, string | null][] = [
    ['Severity', message.severity],
    ['Status', message.status],
    ['Device', message.deviceId],
    ['Alert', message.alertId],
    ['Triggered at', message.triggeredAt],
  ];
  return rows.filter((row): row is [string, string] => row[1] !== null).map(([name, value]) => ({ name, value }));
}

function plainText(message: ChannelMessage): string {
  return [headline(message), message.message ?? '', ...facts(message).map((f) => `${f.name}: ${f.value}`)].filter(Boolean).join('\n');
}

/** Slack incoming webhook: `text` (the notification line) and Block Kit blocks with the details. */
export function slackBody(message: ChannelMessage): Record<string, unknown> {
  return {
    text: headline(message),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: headline(message).slice(0, 150) } },
      ...(message.message ? [{ type: 'section', text: { type: 'mrkdwn', text: message.message } }] : []),
      { type: 'section', fields: facts(message).map((f) => ({ type: 'mrkdwn', text: `*${f.name}*\n${f.value}` })) },
    ],
    attachments: [{ color: COLOURS[message.severity] ?? COLOURS.info, fallback: plainText(message) }],
  };
}

/**
 * Teams incoming webhook: a MessageCard (classic connectors) that also carries the same content as
 * an Adaptive Card attachment (Workflows webhooks); each kind of URL reads its own part.
 */
export function teamsBody(message: ChannelMessage): Record<string, unknown> {
  return {
    '@type': 'MessageCard',
    '@context': 'https://schema.org/extensions',
    summary: headline(message),
    themeColor: (COLOURS[message.severity] ?? COLOURS.info!).slice(1),
    title: headline(message),
    text: message.message ?? '',
    sections: [{ facts: facts(message) }],
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [
            { type: 'TextBlock', text: headline(message), weight: 'Bolder', size: 'Medium', wrap: true },
            ...(message.message ? [{ type: 'TextBlock', text: message.message, wrap: true }] : []),
            { type: 'FactSet', facts: facts(message).map((f) => ({ title: f.name, value: f.value })) },
          ],
        },
      },
    ],
  };
}

const WEBHOOK_EVENT: Record<ChannelMessageKind, string> = { triggered: 'alert.triggered', escalated: 'alert.escalated', resolved: 'alert.resolved', test: 'alert.test', automation: 'automation.notify' };

/**
 * Generic webhook: the event and the alert's facts as JSON. `type` and `data` carry them as the
 * service's webhooks do (`data` is the alert event's payload), so one receiver can take both.
 */
export function webhookBody(message: ChannelMessage): Record<string, unknown> {
  return {
    event: WEBHOOK_EVENT[message.kind],
    type: WEBHOOK_EVENT[message.kind],
    data: { alertId: message.alertId, deviceId: message.deviceId, ruleId: message.ruleId, severity: message.severity, status: message.status, title: message.title },
    timestamp: message.timestamp,
    orgId: message.orgId,
    alert: {
      id: message.alertId,
      title: message.title,
      message: message.message,
      severity: message.severity,
      status: message.status,
      deviceId: message.deviceId,
      ruleId: message.ruleId,
      triggeredAt: message.triggeredAt,
    },
    escalationStep: message.escalationStep,
  };
}

/** The dedup key PagerDuty groups an alert's trigger and resolve under. */
export function pagerdutyDedupKey(message: Pick<ChannelMessage, 'alertId' | 'timestamp'>, deliveryId: string): string {
  return message.alertId ?? `test-${deliveryId}`;
}

/** PagerDuty Events API v2: a trigger (escalations re-trigger the same incident) or a resolve, by dedup key. */
export function pagerdutyBody(message: ChannelMessage, routingKey: string, deliveryId: string): Record<string, unknown> {
  const dedupKey = pagerdutyDedupKey(message, deliveryId);
  if (message.kind === 'resolved') return { routing_key: routingKey, event_action: 'resolve', dedup_key: dedupKey };
  return {
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key: dedupKey,
    payload: {
      summary: headline(message).slice(0, 1024),
      severity: PAGERDUTY_SEVERITY[message.severity] ?? 'info',
      source: message.deviceId ?? SOURCE,
      timestamp: message.triggeredAt ?? message.timestamp,
      component: message.ruleId ?? undefined,
      custom_details: { alertId: message.alertId, message: message.message, status: message.status, escalationStep: message.escalationStep },
    },
  };
}

async function postJson(ctx: RequestContext, url: string, body: unknown, headers: Record<string, string> = {}): Promise<number> {
  let response;
  try {
    response = await guardedRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': SOURCE, ...headers }, body: JSON.stringify(body), timeoutMs: REQUEST_TIMEOUT_MS, maxBodyBytes: 64 * 1024 },
      guardOptions(ctx),
    );
  } catch (error) {
    throw new ChannelSendError((error as Error).message);
  }
  if (response.status < 200 || response.status >= 300) throw new ChannelSendError(`HTTP ${response.status}: ${response.body.slice(0, 200)}`, response.status);
  return response.status;
}

/**
 * Sends one message through one channel; resolves with the HTTP status (null for email), throws
 * `ChannelSendError` with what went wrong.
 */
export async function sendThroughChannel(ctx: RequestContext, channel: SendableChannel, message: ChannelMessage, deliveryId: string): Promise<number | null> {
  const { alertChannels } = ctx.runtime.config;
  switch (channel.type) {
    case 'email':
      try {
        await deliverMail(ctx, { to: channel.config.to ?? [], subject: headline(message), text: plainText(message) });
      } catch (error) {
        throw new ChannelSendError((error as Error).message);
      }
      return null;
    case 'slack':
      return postJson(ctx, channel.secret!, slackBody(message));
    case 'teams':
      return postJson(ctx, channel.secret!, teamsBody(message));
    case 'webhook':
      return postJson(ctx, channel.secret!, webhookBody(message), { 'x-service-delivery-id': deliveryId });
    case 'pagerduty':
      return postJson(ctx, alertChannels.pagerdutyEventsUrl, pagerdutyBody(message, channel.secret!, deliveryId));
    case 'sms': {
      const sms = alertChannels.sms;
      if (!sms) throw new ChannelSendError('No SMS provider is configured (SMS_API_URL)');
      const auth: Record<string, string> = sms.apiKey ? { authorization: `Bearer ${sms.apiKey}` } : {};
      const text = plainText(message).slice(0, 480);
      let status = 0;
      for (const to of channel.config.to ?? []) status = await postJson(ctx, sms.url, { to, message: text }, auth);
      return status;
    }
  }
}
