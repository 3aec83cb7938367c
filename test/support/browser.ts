// A tiny scripted browser: cookie jar + fetch that follows redirects itself, so a test sees every hop and can
// stop before a Location that is not served (an external redirect_uri, a `#ssoCode=` dashboard URL).

export interface BrowserCookie {
  name: string;
  value: string;
  /** Lower-case host; with `hostOnly` it must equal the request host, otherwise it is a domain suffix. */
  domain: string;
  hostOnly: boolean;
  path: string;
  /** Epoch milliseconds; null for a session cookie. */
  expiresAt: number | null;
  secure: boolean;
}

export interface BrowserResponse {
  /** URL of the last response (the one carrying `location` when stopped). */
  url: string;
  status: number;
  headers: Headers;
  body: string;
  /** Set when navigation stopped because `stopAt` matched this absolute redirect target (not fetched). */
  location?: string;
}

export interface NavigateOptions {
  /** Called with each absolute redirect target; returning true stops before fetching it. */
  stopAt?: (location: string) => boolean;
}

export interface SubmitFormOptions extends NavigateOptions {
  /** Which `<form>` on the page to submit; default 0. */
  formIndex?: number;
}

const MAX_REDIRECTS = 20;

export class Browser {
  /** Keyed by `domain|path|name`, which identifies a cookie (RFC 6265 §5.3). */
  readonly cookies = new Map<string, BrowserCookie>();

  get(url: string, opts: NavigateOptions = {}): Promise<BrowserResponse> {
    return this.navigate('GET', url, undefined, opts);
  }

  post(url: string, form: Record<string, string>, opts: NavigateOptions = {}): Promise<BrowserResponse> {
    return this.navigate('POST', url, new URLSearchParams(form), opts);
  }

  /** Submits a form found on `page`: its inputs' values, overridden/extended by `fields`. */
  submitForm(
    page: { url: string; body: string },
    fields: Record<string, string>,
    opts: SubmitFormOptions = {},
  ): Promise<BrowserResponse> {
    const form = parseForms(page.body)[opts.formIndex ?? 0];
    if (!form) throw new Error(`No form #${opts.formIndex ?? 0} on ${page.url}`);
    const action = new URL(form.action || page.url, page.url);
    const params = new URLSearchParams({ ...form.fields, ...fields });
    if (form.method === 'POST') return this.navigate('POST', action.href, params, opts);
    action.search = params.toString();
    return this.navigate('GET', action.href, undefined, opts);
  }

  /** Value of the cookie `name` that would be sent to `url`. */
  cookie(name: string, url: string): string | undefined {
    return this.cookiesFor(new URL(url)).find((c) => c.name === name)?.value;
  }

  clearCookies(): void {
    this.cookies.clear();
  }

  private async navigate(
    method: string,
    url: string,
    body: URLSearchParams | undefined,
    { stopAt }: NavigateOptions,
  ): Promise<BrowserResponse> {
    let current = new URL(url);
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const headers: Record<string, string> = {};
      const cookieHeader = this.cookiesFor(current).map((c) => `${c.name}=${c.value}`).join('; ');
      if (cookieHeader) headers.cookie = cookieHeader;
      if (body) headers['content-type'] = 'application/x-www-form-urlencoded';

      const response = await fetch(current, { method, headers, body, redirect: 'manual' });
      this.storeCookies(current, response.headers.getSetCookie());
      const result: BrowserResponse = {
        url: current.href,
        status: response.status,
        headers: response.headers,
        body: await response.text(),
      };
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) return result;

      const next = new URL(location, current);
      if (stopAt?.(next.href)) return { ...result, location: next.href };
      // Like browsers: 307/308 repeat the request, every other redirect becomes a GET without body.
      if (response.status !== 307 && response.status !== 308) {
        method = 'GET';
        body = undefined;
      }
      current = next;
    }
    throw new Error(`More than ${MAX_REDIRECTS} redirects starting at ${url}`);
  }

  private cookiesFor(url: URL): BrowserCookie[] {
    const host = url.hostname.toLowerCase();
    const now = Date.now();
    return [...this.cookies.values()]
      .filter((c) => (c.expiresAt === null || c.expiresAt > now)
        && (c.hostOnly ? host === c.domain : domainMatches(host, c.domain))
        && pathMatches(url.pathname, c.path)
        && (!c.secure || url.protocol === 'https:'))
      .sort((a, b) => b.path.length - a.path.length);
  }

  private storeCookies(url: URL, setCookies: string[]): void {
    const host = url.hostname.toLowerCase();
    for (const header of setCookies) {
      const [pair, ...attributes] = header.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const cookie: BrowserCookie = {
        name: pair.slice(0, eq).trim(),
        value: pair.slice(eq + 1).trim(),
        domain: host,
        hostOnly: true,
        path: defaultPath(url.pathname),
        expiresAt: null,
        secure: false,
      };
      let maxAge: number | undefined;
      for (const attribute of attributes) {
        const [rawKey, ...rest] = attribute.split('=');
        const key = rawKey.trim().toLowerCase();
        const value = rest.join('=').trim();
        if (key === 'path' && value.startsWith('/')) cookie.path = value;
        else if (key === 'domain' && value) {
          cookie.domain = value.replace(/^\./, '').toLowerCase();
          cookie.hostOnly = false;
        } else if (key === 'max-age' && /^-?\d+$/.test(value)) maxAge = Number(value);
        else if (key === 'expires' && !Number.isNaN(Date.parse(value))) cookie.expiresAt = Date.parse(value);
        else if (key === 'secure') cookie.secure = true;
      }
      // Max-Age wins over Expires (RFC 6265 §5.3 step 3).
      if (maxAge !== undefined) cookie.expiresAt = Date.now() + maxAge * 1000;
      if (!cookie.hostOnly && !domainMatches(host, cookie.domain)) continue;

      const key = `${cookie.domain}|${cookie.path}|${cookie.name}`;
      if (cookie.expiresAt !== null && cookie.expiresAt <= Date.now()) this.cookies.delete(key);
      else this.cookies.set(key, cookie);
    }
  }
}

/**
 * Drives the test IdP's sign-in page as `accountId`, starting from an authorization URL, until the IdP
 * redirects somewhere `stopAt` accepts; returns that URL. With an existing IdP session and grant the IdP
 * may redirect straight away, in which case no form is submitted.
 */
export async function loginAtIdp(
  browser: Browser,
  authorizationUrl: string,
  accountId: string,
  stopAt: (location: string) => boolean,
): Promise<string> {
  let page = await browser.get(authorizationUrl, { stopAt });
  if (page.location === undefined) page = await browser.submitForm(page, { login: accountId }, { stopAt });
  if (page.location === undefined) {
    throw new Error(`IdP login ended at ${page.url} (HTTP ${page.status}): ${page.body.slice(0, 500)}`);
  }
  return page.location;
}

/** The one-time code in the dashboard URL a successful SSO login ends at. */
export const ssoCode = (target: string): string => new URL(target).hash.replace(/^#ssoCode=/, '');

/** The `error` a failed SSO login reports to the dashboard, or null. */
export const errorOf = (target: string): string | null => new URL(target).searchParams.get('error');

function domainMatches(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  return requestPath === cookiePath
    || (requestPath.startsWith(cookiePath) && (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/'));
}

// RFC 6265 §5.1.4: the request path up to (not including) its last `/`, or `/`.
function defaultPath(requestPath: string): string {
  const lastSlash = requestPath.lastIndexOf('/');
  return lastSlash <= 0 ? '/' : requestPath.slice(0, lastSlash);
}

interface ParsedForm {
  action: string;
  method: 'GET' | 'POST';
  fields: Record<string, string>;
}

// Regex parsing is enough for the simple, machine-generated pages the tests drive.
function parseForms(html: string): ParsedForm[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map(([, formAttributes, content]) => {
    const attrs = parseAttributes(formAttributes);
    const fields: Record<string, string> = {};
    for (const [, inputAttributes] of content.matchAll(/<input\b([^>]*)>/gi)) {
      const input = parseAttributes(inputAttributes);
      const type = (input.type ?? 'text').toLowerCase();
      if (!input.name || ['submit', 'button', 'image', 'reset', 'file'].includes(type)) continue;
      if ((type === 'checkbox' || type === 'radio') && !('checked' in input)) continue;
      fields[input.name] = input.value ?? (type === 'checkbox' || type === 'radio' ? 'on' : '');
    }
    return { action: attrs.action ?? '', method: attrs.method?.toUpperCase() === 'POST' ? 'POST' : 'GET', fields };
  });
}

function parseAttributes(source: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const [, name, doubleQuoted, singleQuoted, bare] of source.matchAll(
    /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g,
  )) {
    attributes[name.toLowerCase()] = decodeEntities(doubleQuoted ?? singleQuoted ?? bare ?? '');
  }
  return attributes;
}

function decodeEntities(value: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, code: string) => {
    if (code[0] === '#') {
      const point = code[1].toLowerCase() === 'x' ? parseInt(code.slice(2), 16) : parseInt(code.slice(1), 10);
      return String.fromCodePoint(point);
    }
    return named[code.toLowerCase()] ?? entity;
  });
}
