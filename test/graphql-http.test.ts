// GraphQL over HTTP compliance: the graphql-http package's server audits against the running server.
import { serverAudits } from 'graphql-http';
import { createTestApp, type TestApp } from './support/app.js';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => app?.stop());

const audits = serverAudits({ url: () => `${app.url}/graphql` });

test.each(audits.filter((audit) => audit.name.startsWith('MUST')).map((audit) => [audit.name, audit] as const))('%s', async (_name, audit) => {
  const result = await audit.fn();
  expect({ status: result.status, reason: result.status === 'ok' ? undefined : result.reason }).toEqual({ status: 'ok', reason: undefined });
});

test('SHOULD and MAY audits, reported', async () => {
  const results = await Promise.all(audits.filter((audit) => !audit.name.startsWith('MUST')).map(async (audit) => ({ name: audit.name, result: await audit.fn() })));
  const failed = results.filter(({ result }) => result.status !== 'ok').map(({ name, result }) => `${name}: ${result.status === 'ok' ? '' : result.reason}`);
  console.log(`${results.length - failed.length}/${results.length} SHOULD/MAY audits pass${failed.length ? `; not:\n${failed.join('\n')}` : ''}`);
  expect(results.length).toBeGreaterThan(0);
});
