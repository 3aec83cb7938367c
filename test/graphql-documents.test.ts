import { buildSchema } from 'graphql';
import { DocumentCache } from '../src/graphql/documents.js';
import { queryLimits } from '../src/graphql/limits.js';

const schema = buildSchema('type Query { a: A } type A { b: A c: String }');

test('a subscribe message document is parsed and validated once per query text', () => {
  const cache = new DocumentCache([queryLimits({ maxDepth: 3, maxCost: 100, maxAliases: 100 })]);
  const query = '{ a { c } }';
  const first = cache.parse(query);
  expect(cache.validate(schema, first)).toEqual([]);
  const again = cache.parse(query);
  expect(again).toBe(first);
  expect(cache.validate(schema, again)).toEqual([]);
});

test('invalid documents, and those over the limits, are refused every time and never cached', () => {
  const cache = new DocumentCache([queryLimits({ maxDepth: 3, maxCost: 100, maxAliases: 100 })]);
  for (const query of ['{ a { nope } }', '{ a { b { b { c } } } }']) {
    const first = cache.parse(query);
    expect(cache.validate(schema, first).length).toBeGreaterThan(0);
    const again = cache.parse(query);
    expect(again).not.toBe(first);
    expect(cache.validate(schema, again).length).toBeGreaterThan(0);
  }
});
