/**
 * Checking a value against a contract schema at a boundary (the web app's answers): the value,
 * typed as the schema says, or an error naming the first path that does not match. TypeBox's
 * interpreter (Value.Check), never its compiler: the admin app's Content-Security-Policy forbids
 * eval.
 */
import { TypeRegistry, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ErrorBody } from './common.ts';
import { LineItem, Metadata, Receipt } from './receipts.ts';

/** The shared schemas a Type.Ref names. */
export const REFERENCES: TSchema[] = [ErrorBody, LineItem, Metadata, Receipt];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const typeOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);

/**
 * Type.Unsafe schemas (the enums: stringEnum, answerEnum, the receipt exception) are plain JSON
 * Schema to TypeBox; their `type` and `enum` are what they say.
 */
if (!TypeRegistry.Has('Unsafe')) {
  TypeRegistry.Set<{ type?: string | string[]; enum?: Json[] }>('Unsafe', (schema, value) => {
    const types = schema.type === undefined ? undefined : [schema.type].flat();
    const actual = typeOf(value);
    if (types !== undefined && !types.includes(actual) && !(actual === 'integer' && types.includes('number'))) return false;
    return schema.enum === undefined || schema.enum.includes(value as Json);
  });
}

export class ContractError extends Error {
  constructor(
    readonly what: string,
    readonly path: string,
    /** Starts with its separator: " is ..." or ": ...". */
    detail: string,
  ) {
    super(`The server's answer was not understood: ${what}: ${path === '' ? 'the answer' : path}${detail}`);
    this.name = 'ContractError';
  }
}

/** Whether `value` matches `schema` (an answer that may or may not be, say, an error body). */
export function matches<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return Value.Check(schema, REFERENCES, value);
}

/** `value` if it matches `schema`; otherwise a ContractError naming the first failing path. */
export function check<T extends TSchema>(schema: T, value: unknown, what: string): Static<T> {
  if (Value.Check(schema, REFERENCES, value)) return value;
  const first = Value.Errors(schema, REFERENCES, value).First();
  if (first === undefined) throw new ContractError(what, '', ' does not match');
  const values = (first.schema as { enum?: unknown }).enum;
  const detail = Array.isArray(values) ? ` is ${JSON.stringify(first.value)}, not one of ${values.map((v) => JSON.stringify(v)).join(', ')}` : `: ${first.message}`;
  throw new ContractError(what, first.path, detail);
}
