import { isEnumType, isInputObjectType, isInterfaceType, isObjectType, isScalarType, isUnionType, type GraphQLSchema } from 'graphql';
import { buildGraphqlSchema } from '../src/graphql/schema.js';

/**
 * A schema people can read: every type, field, argument, input field and enum value says what it is.
 * Descriptions come from the zod contract (`.describe()`/`.meta({ description })`), which REST's
 * OpenAPI document reads too; a domain added later passes this test only once it is described.
 */

const noEvents = { publish: () => {}, subscribe: () => ({ [Symbol.asyncIterator]: () => ({ next: async () => ({ value: undefined, done: true }) }) }) };

/** The schema's elements without a description, as `Type`, `Type.field`, `Type.field(arg)` and `Enum.VALUE`. */
function undescribed(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  const check = (description: string | null | undefined, what: string) => {
    if (!description?.trim()) missing.push(what);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    // The specification's own scalars are described by it, not by this API.
    if (isScalarType(type) && ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(type.name)) continue;
    check(type.description, type.name);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        check(field.description, `${type.name}.${field.name}`);
        for (const arg of field.args) check(arg.description, `${type.name}.${field.name}(${arg.name})`);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) check(field.description, `${type.name}.${field.name}`);
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) check(value.description, `${type.name}.${value.name}`);
    } else if (isUnionType(type)) {
      // A union's members are object types, checked on their own.
    }
  }
  return missing.sort();
}

test('every type, field, argument, input field and enum value has a description', async () => {
  const schema = await buildGraphqlSchema(noEvents);
  expect(undescribed(schema)).toEqual([]);
});

test('descriptions say more than the name they describe', async () => {
  const schema = await buildGraphqlSchema(noEvents);
  const restated: string[] = [];
  const words = (text: string) => text.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !(isObjectType(type) || isInputObjectType(type))) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.description && words(field.description) === words(field.name)) restated.push(`${type.name}.${field.name}: ${field.description}`);
    }
  }
  expect(restated).toEqual([]);
});
