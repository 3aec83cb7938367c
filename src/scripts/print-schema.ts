/** `npm run schema`: writes schema.graphql from the resolvers (CI fails when the committed file is stale). */
import fs from 'node:fs';
import path from 'node:path';
import { printSchemaFile } from '../graphql/print.js';
import { projectRoot } from '../paths.js';

fs.writeFileSync(path.join(projectRoot, 'schema.graphql'), await printSchemaFile());
console.log('wrote schema.graphql');
