import nodemailer from 'nodemailer';
import type { RequestContext } from '../../auth/context.js';

export interface Mail {
  to: string | string[];
  subject: string;
  text: string;
}

/**
 * Sends one message over SMTP (`SMTP_URL`, from `SMTP_FROM`). Without SMTP configured it only logs
 * that nothing was sent: the caller already has what the message carries (e.g. the invite link).
 * Bodies are never logged, since they can hold one-time links.
 */
export async function sendMail(ctx: RequestContext, mail: Mail): Promise<void> {
  const smtp = ctx.runtime.config.smtp;
  if (!smtp) {
    ctx.log.info({ to: mail.to, subject: mail.subject }, 'SMTP is not configured: email not sent');
    return;
  }
  await transmit(ctx, smtp, mail);
}

/** Sends one message over SMTP, or throws: for messages that reach their readers no other way (alert channels). */
export async function deliverMail(ctx: RequestContext, mail: Mail): Promise<void> {
  const smtp = ctx.runtime.config.smtp;
  if (!smtp) throw new Error('SMTP is not configured (SMTP_URL)');
  await transmit(ctx, smtp, mail);
}

async function transmit(ctx: RequestContext, smtp: { url: string; from: string }, mail: Mail): Promise<void> {
  const transport = nodemailer.createTransport(smtp.url);
  try {
    await transport.sendMail({ from: smtp.from, to: mail.to, subject: mail.subject, text: mail.text });
    ctx.log.info({ to: mail.to, subject: mail.subject }, 'email sent');
  } finally {
    transport.close();
  }
}
