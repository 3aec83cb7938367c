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
