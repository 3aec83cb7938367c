import fs from 'node:fs';
import path from 'node:path';
import { printSchemaFile } from '../src/graphql/print.js';
import { projectRoot } from '../src/paths.js';

test('the committed schema.graphql matches the resolvers (run `npm run schema` after changing them)', async () => {
  const committed = fs.readFileSync(path.join(projectRoot, 'schema.graphql'), 'utf8');
  expect(committed).toBe(await printSchemaFile());
});
