/**
 * Parsing API answers at the boundary: every page works with typed values, and an answer of an
 * unexpected shape is reported as such instead of failing somewhere in the rendering.
 */
export class DecodeError extends Error {
  constructor(what: string, expected: string) {
    super(`The server's answer was not understood: ${what} should be ${expected}`);
    this.name = 'DecodeError';
  }
}

export type Decoder<T> = (value: unknown, what: string) => T;

export function obj(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new DecodeError(what, 'an object');
  return value as Record<string, unknown>;
}

export const str: Decoder<string> = (v, what) => {
  if (typeof v !== 'string') throw new DecodeError(what, 'a string');
  return v;
};

export const num: Decoder<number> = (v, what) => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new DecodeError(what, 'a number');
  return v;
};

export const bool: Decoder<boolean> = (v, what) => {
  if (typeof v !== 'boolean') throw new DecodeError(what, 'true or false');
  return v;
};

export function arr<T>(item: Decoder<T>): Decoder<T[]> {
  return (v, what) => {
    if (!Array.isArray(v)) throw new DecodeError(what, 'a list');
    return v.map((x, i) => item(x, `${what}[${i}]`));
  };
}

export function nullable<T>(d: Decoder<T>): Decoder<T | null> {
  return (v, what) => (v === null || v === undefined ? null : d(v, what));
}

export function optional<T>(d: Decoder<T>): Decoder<T | undefined> {
  return (v, what) => (v === undefined ? undefined : d(v, what));
}

type Shape = Record<string, Decoder<unknown>>;
type Decoded<S extends Shape> = { [K in keyof S]: ReturnType<S[K]> };

/** An object decoder from a field → decoder map; unknown fields are dropped. */
export function record<S extends Shape>(shape: S): Decoder<Decoded<S>> {
  return (v, what) => {
    const o = obj(v, what);
    const out: Record<string, unknown> = {};
    for (const [k, d] of Object.entries(shape)) out[k] = d(o[k], `${what}.${k}`);
    return out as Decoded<S>;
  };
}
