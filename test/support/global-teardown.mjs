import pg from 'pg';

export default async function globalTeardown() {
  const template = globalThis.__testTemplate;
  // An embedded server takes its databases with it; a borrowed one (DATABASE_URL) keeps the template otherwise.
  if (template && !globalThis.__testDatabase) {
    const client = new pg.Client({ connectionString: template.adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${template.name} WITH (FORCE)`).finally(() => client.end());
  }
  await globalThis.__testDatabase?.stop();
}
