import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';

/** Every `import … from '<specifier>'` of a file, with whether it is type-only. */
function importsOf(file: string): { specifier: string; typeOnly: boolean }[] {
  const source = fs.readFileSync(file, 'utf8');
  return [...source.matchAll(/^import\s+(type\s+)?[^'"]*?from\s+'([^']+)'/gms)].map((m) => ({ specifier: m[2]!, typeOnly: !!m[1] }));
}

function tsFiles(folder: string): string[] {
  return fs
    .readdirSync(path.join(projectRoot, folder))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(projectRoot, folder, f));
}

// The adapters parse, call a service and shape the answer: no entities, no queries, no role logic.
const ADAPTER_MAY_USE = [/^\.\//, /^\.\.\/src\/(services|auth)\//, /^\.\.\/src\/(pagination|validation|errors)\.js$/, /^\.\.\/src\/graphql\/context\.js$/, /^\.\.\/src\/http\/(openapi|rate-limit)\.js$/, /^\.\.\/src\/events\/types\.js$/, /^[^.]/];

test.each(['rest', 'resolvers'])('%s/ imports only services, auth, shared helpers and types', (folder) => {
  const offending = tsFiles(folder).flatMap((file) =>
    importsOf(file)
      .filter((i) => !i.typeOnly && !ADAPTER_MAY_USE.some((allowed) => allowed.test(i.specifier)))
      .map((i) => `${path.relative(projectRoot, file)} → ${i.specifier}`),
  );
  expect(offending).toEqual([]);
});

test('services never import the adapters', () => {
  const offending = tsFiles('src/services').flatMap((file) =>
    importsOf(file)
      .filter((i) => /(^|\/)(rest|resolvers)\//.test(i.specifier))
      .map((i) => `${path.relative(projectRoot, file)} → ${i.specifier}`),
  );
  expect(offending).toEqual([]);
});
