import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';

// The layering itself is checked by dependency-cruiser (`npm run depcheck`, rules in .dependency-cruiser.cjs);
// it only sees the folders it is given, so a new source folder must be added there too.
test('the layering check reads every source folder the compiler builds', () => {
  const read = (file: string) => JSON.parse(fs.readFileSync(path.join(projectRoot, file), 'utf8'));
  const compiled = read('tsconfig.json').include as string[];
  const checked = (read('package.json').scripts.depcheck as string).split(/\s+/).slice(1);
  expect(checked.sort()).toEqual(compiled.filter((folder) => folder !== 'test').sort());
});

/**
 * A domain's tables are its own: another domain asks through its api.ts. The reads that predate the
 * domain folders are listed here as debt to pay down (each entry `reader -> entity file`); a new
 * one fails this test. Ownership comes from the manifests, which name their entities.
 */
const KNOWN_FOREIGN_TABLE_READS = [
  'devices -> device-group',
  'devices -> organization',
  'devices -> partner',
  'devices -> site',
  'groups -> device',
  'identity -> organization',
  'identity -> partner',
  'identity -> site',
  'sso -> organization',
  'sso -> role',
  'sso -> user',
];

test("services load another domain's entity classes only where recorded as debt", () => {
  const services = path.join(projectRoot, 'src/services');
  const domains = fs.readdirSync(services).filter((d) => fs.existsSync(path.join(services, d, 'index.ts')));
  const owner = new Map<string, string>();
  for (const domain of domains) {
    for (const m of fs.readFileSync(path.join(services, domain, 'index.ts'), 'utf8').matchAll(/from '\.\.\/\.\.\/\.\.\/entities\/([a-z-]+)\.js'/g)) owner.set(m[1]!, domain);
  }
  const reads = new Set<string>();
  for (const domain of domains) {
    for (const file of fs.readdirSync(path.join(services, domain)).filter((f) => f.endsWith('.ts') && f !== 'index.ts')) {
      const text = fs.readFileSync(path.join(services, domain, file), 'utf8');
      // Type-only imports name a shape, not a table to query.
      for (const m of text.matchAll(/import\s+(type\s+)?\{[^}]*\}\s+from '\.\.\/\.\.\/\.\.\/entities\/([a-z-]+)\.js'/g)) {
        const entityOwner = owner.get(m[2]!);
        if (!m[1] && entityOwner && entityOwner !== domain) reads.add(`${domain} -> ${m[2]}`);
      }
    }
  }
  expect([...reads].sort()).toEqual(KNOWN_FOREIGN_TABLE_READS);
});
