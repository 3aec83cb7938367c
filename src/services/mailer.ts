import nodemailer from 'nodemailer';
import type { RequestContext } from '../auth/context.js';

export interface Mail {
  to: string;
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
  const transport = nodemailer.createTransport(smtp.url);
  try {
    await transport.sendMail({ from: smtp.from, to: mail.to, subject: mail.subject, text: mail.text });
    ctx.log.info({ to: mail.to, subject: mail.subject }, 'email sent');
  } finally {
    transport.close();
  }
}
