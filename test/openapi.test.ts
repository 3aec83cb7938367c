import { createTestApp, type TestApp } from './support/app.js';
import { rest, type As } from './support/clients.js';
import { sql } from './support/db.js';
import { buildOrg, buildRole, buildSite, buildUser } from './support/factories.js';

/**
 * The OpenAPI document's answers come from the zod views GraphQL derives its types from: each named
 * view is one entry of `components.schemas`, and the routes refer to it.
 */

type Schema = Record<string, unknown>;
interface Operation {
  responses: Record<string, { content?: { 'application/json'?: { schema?: Schema } } }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const COMPONENT = '#/components/schemas/';

/** Operations answering 200, 201 or 202 without a JSON schema, and why. Anything else without one fails. */
const WITHOUT_SCHEMA: Record<string, string> = {
  'get /api/v1/audit/export': 'a CSV or JSON file, streamed',
  'post /api/v1/audit/export': 'a CSV or JSON file, streamed',
  'get /api/v1/sso/saml/metadata': 'SAML metadata, XML',
  'get /api/v1/agents/install.sh': 'a shell script',
  'get /api/v1/patches/compliance/report/{id}/download': 'a CSV or PDF file',
  'post /api/v1/sso/exchange': 'answers { accessToken, refreshToken }; SessionTokensSchema also requires expiresIn',
  'get /api/v1/webhooks/{id}': 'WebhookDetailView (the webhook with its deliveryStats) is a type, not a schema',
};

let app: TestApp;
let doc: Document;
beforeAll(async () => {
  app = await createTestApp();
  const res = await rest(app).get('/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body as Document;
});
afterAll(async () => {
  await app.stop();
});

const operations = () => Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ route: `${method} ${path}`, op })));
const successSchema = (op: Operation): Schema | undefined => {
  const status = Object.keys(op.responses).find((s) => s !== 'default')!;
  return op.responses[status]!.content?.['application/json']?.schema;
};

const typeOf = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'number' && Number.isInteger(value) ? 'integer' : typeof value);
const isObject = (value: unknown): value is Record<string, unknown> => typeOf(value) === 'object';
const ANNOTATIONS = new Set(['title', 'description', 'format', 'default', 'examples']);

/**
 * Where `value` breaks `schema`: the JSON Schema keywords the document's views use. A keyword this
 * does not know is reported too, so a schema is never passed unread.
 */
function violations(value: unknown, schema: Schema, at = '$'): string[] {
  const errors: string[] = [];
  for (const [keyword, rule] of Object.entries(schema)) {
    switch (keyword) {
      case '$ref': {
        const target = doc.components.schemas[String(rule).slice(COMPONENT.length)];
        if (!String(rule).startsWith(COMPONENT) || !target) errors.push(`${at}: unresolved ${String(rule)}`);
        else errors.push(...violations(value, target, at));
        break;
      }
      case 'type':
        if (!([rule].flat() as string[]).some((type) => type === typeOf(value) || (type === 'number' && typeOf(value) === 'integer'))) errors.push(`${at}: ${JSON.stringify(value)} is not of type ${String(rule)}`);
        break;
      case 'enum':
        if (!(rule as unknown[]).includes(value)) errors.push(`${at}: ${JSON.stringify(value)} is none of ${JSON.stringify(rule)}`);
        break;
      case 'const':
        if (value !== rule) errors.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(rule)}`);
        break;
      case 'pattern':
        if (typeof value === 'string' && !new RegExp(rule as string).test(value)) errors.push(`${at}: ${JSON.stringify(value)} does not match ${String(rule)}`);
        break;
      case 'minimum':
      case 'maximum':
        if (typeof value === 'number' && (keyword === 'minimum' ? value < (rule as number) : value > (rule as number))) errors.push(`${at}: ${value} is past the ${keyword} ${String(rule)}`);
        break;
      case 'required':
        if (isObject(value)) for (const key of rule as string[]) if (!(key in value)) errors.push(`${at}: ${key} is missing`);
        break;
      case 'properties':
        if (isObject(value)) for (const [key, property] of Object.entries(rule as Record<string, Schema>)) if (key in value) errors.push(...violations(value[key], property, `${at}.${key}`));
        break;
      case 'additionalProperties':
        if (isObject(value))
          for (const key of Object.keys(value).filter((k) => !(k in ((schema.properties as Schema | undefined) ?? {}))))
            errors.push(...(rule === false ? [`${at}: ${key} is not in the schema`] : violations(value[key], rule as Schema, `${at}.${key}`)));
        break;
      case 'propertyNames':
        if (isObject(value)) for (const key of Object.keys(value)) errors.push(...violations(key, rule as Schema, `${at} key ${key}`));
        break;
      case 'items':
        if (Array.isArray(value)) value.forEach((item, i) => errors.push(...violations(item, rule as Schema, `${at}[${i}]`)));
        break;
      case 'anyOf':
      case 'oneOf': {
        const matching = (rule as Schema[]).filter((branch) => violations(value, branch, at).length === 0).length;
        if (keyword === 'anyOf' ? matching === 0 : matching !== 1) errors.push(`${at}: ${matching} of the ${keyword} branches match`);
        break;
      }
      default:
        if (!ANNOTATIONS.has(keyword)) errors.push(`${at}: unsupported keyword ${keyword}`);
    }
  }
  return errors;
}

describe('response schemas', () => {
  test('every operation answering 200, 201 or 202 declares its JSON schema, but for the listed ones', () => {
    const missing = operations()
      .filter(({ op }) => Object.keys(op.responses).some((status) => ['200', '201', '202'].includes(status)) && !successSchema(op))
      .map(({ route }) => route);
    expect(missing.sort()).toEqual(Object.keys(WITHOUT_SCHEMA).sort());
  });

  test('each named view is one component, referenced wherever an answer holds it', () => {
    const text = JSON.stringify(doc);
    const refs = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    for (const ref of new Set(refs)) expect({ ref, resolves: ref.startsWith(COMPONENT) && ref.slice(COMPONENT.length) in doc.components.schemas }).toEqual({ ref, resolves: true });
    // Defined once: no answer spells a view out again.
    for (const name of Object.keys(doc.components.schemas)) if (name !== 'Error') expect({ name, definitions: text.split(`"title":"${name}"`).length - 1 }).toEqual({ name, definitions: 1 });
    for (const { route, op } of operations()) {
      const schema = successSchema(op);
      if (schema) expect({ route, schema }).toEqual({ route, schema: { $ref: expect.stringMatching(/^#\/components\/schemas\/\w+$/) } });
    }
    const { SitePage, Me } = doc.components.schemas as Record<string, { properties: Record<string, Schema> }>;
    expect(SitePage!.properties.data).toEqual(expect.objectContaining({ type: 'array', items: { $ref: `${COMPONENT}Site` } }));
    expect(SitePage!.properties.pagination).toEqual({ $ref: `${COMPONENT}Pagination` });
    expect(Me!.properties.memberships).toEqual(expect.objectContaining({ items: { $ref: `${COMPONENT}Membership` } }));
    expect(doc.paths['/api/v1/orgs/sites']!.get!.responses['200']!.content!['application/json']!.schema).toEqual({ $ref: `${COMPONENT}SitePage` });
    expect(doc.paths['/api/v1/orgs/sites']!.post!.responses['201']!.content!['application/json']!.schema).toEqual({ $ref: `${COMPONENT}Site` });
  });

  test('real answers validate against their declared schemas', async () => {
    const org = await buildOrg(app);
    await buildSite(app, org.id, { address: '1 Rue de Rivoli, Paris' });
    await buildSite(app, org.id);
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const check = async (as: As, path: string, documented = `/api/v1${path.split('?')[0]}`, method: 'get' | 'post' = 'get', body?: unknown) => {
      const res = method === 'get' ? await rest(app, as).get(path) : await rest(app, as).post(path, body);
      expect(res.status).toBe(200);
      const schema = successSchema(doc.paths[documented]![method]!)!;
      expect({ path, violations: violations(res.body, schema) }).toEqual({ path, violations: [] });
      return res.body;
    };
    expect((await check(viewer.as, '/orgs/sites')).data).toHaveLength(2);
    expect((await check(viewer.as, '/users/me')).memberships).toHaveLength(1);
    await check(viewer.as, '/orgs/');

    const role = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['devices:*', 'audit:read'] });
    expect((await check(viewer.as, `/roles/${role.id}/effective-permissions`, '/api/v1/roles/{id}/effective-permissions')).permissions).toContain('devices:execute');

    // Reports over an entry the viewer's own refused request wrote.
    expect((await rest(app, viewer.as).post('/orgs/sites', { orgId: org.id, name: 'Refused' })).status).toBe(403);
    expect((await check(viewer.as, '/audit/reports/user-activity')).users).toEqual([expect.objectContaining({ actorId: viewer.user.id, denied: 1 })]);
    expect((await check(viewer.as, '/audit/reports/security-events')).events).toEqual([expect.objectContaining({ action: 'access.denied', categories: ['denied'] })]);
    expect((await check(viewer.as, '/audit/reports/compliance')).integrity).toMatchObject({ valid: true });

    // A pending invitation of another organization, as its invitee sees it.
    const other = await buildOrg(app);
    const inviter = await buildUser(app, { orgId: other.id, can: ['users:read', 'users:write'] });
    expect((await rest(app, inviter.as).post('/users/invite', { email: viewer.user.email, name: 'Viewer', roleId: (await buildRole(app, { scope: 'organization', orgId: other.id, permissions: ['users:read'] })).id })).status).toBe(201);
    expect((await check(viewer.as, '/users/me/invitations')).data).toHaveLength(1);

    // Both answers of a password login: a session, or the MFA challenge.
    const login = { email: viewer.user.email, password: viewer.password };
    expect(await check(null, '/auth/login', undefined, 'post', login)).toMatchObject({ user: { id: viewer.user.id } });
    await sql(app, `update "user" set mfa_enabled = true where id = ?`, [viewer.user.id]);
    expect(await check(null, '/auth/login', undefined, 'post', login)).toEqual({ mfaRequired: true, mfaToken: expect.any(String) });
  });

  test('the check catches a missing field, an extra one, a wrong type and a malformed date', async () => {
    const org = await buildOrg(app);
    const site = await buildSite(app, org.id);
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const body = (await rest(app, viewer.as).get(`/orgs/sites/${site.id}`)).body as Record<string, unknown>;
    const schema = successSchema(doc.paths['/api/v1/orgs/sites/{id}']!.get!)!;
    expect(violations(body, schema)).toEqual([]);
    const { name: _name, ...nameless } = body;
    expect(violations(nameless, schema)).toEqual(['$: name is missing']);
    expect(violations({ ...body, secret: 'x' }, schema)).toEqual(['$: secret is not in the schema']);
    expect(violations({ ...body, address: 42 }, schema)).toEqual(['$.address: 42 is not of type string,null']);
    expect(violations({ ...body, createdAt: 'yesterday' }, schema)).toEqual([expect.stringContaining('$.createdAt: "yesterday" does not match')]);
  });
});
