/**
 * Shop configuration: display name, processing fee (held as basis points), tax table (rates held
 * as parts per million) and the origins allowed to embed the payment page.
 */
import { eq } from 'drizzle-orm';
import type { Tx } from '../db/client.ts';
import { shopConfigs, type TaxJurisdiction } from '../db/schema.ts';
import { InvalidInput } from '../lib/errors.ts';
import { bpsToPct, pctToBps, ppmToRate, rateToPpm } from '../lib/money.ts';
import { normalizeWallet } from './wallet.ts';

import { MAX_COMPONENTS, MAX_EMBED_ORIGINS, MAX_JURISDICTIONS } from '../contract/shop.ts';
export { MAX_COMPONENTS, MAX_EMBED_ORIGINS, MAX_JURISDICTIONS };
const JURISDICTION_CODE = /^[A-Za-z0-9-]{1,32}$/;

export interface ShopSettings {
  name: string | null;
  processingFeeBps: number;
  taxJurisdictions: TaxJurisdiction[];
  allowedEmbedOrigins: string[];
}

export interface TaxJurisdictionView {
  code: string;
  /** Fraction: 0.0825 means 8.25%. */
  rate: number;
  components: string[];
}

export interface ShopConfigView {
  name: string | null;
  brandName: string;
  processingFeePct: number;
  taxJurisdictions: TaxJurisdictionView[];
  allowedEmbedOrigins: string[];
}

export interface ShopConfigInput {
  processingFeePct: number;
  /** null clears the name; omitted keeps the stored one. */
  name?: string | null | undefined;
  /** Omitted keeps the stored list. */
  allowedEmbedOrigins?: readonly string[] | undefined;
  /** Omitted keeps the stored table. */
  taxJurisdictions?: readonly { code: string; rate: number; components?: readonly string[] | undefined }[] | undefined;
}

/** The stored settings, or the defaults of an unconfigured shop. */
export async function getShopSettings(db: Tx, wallet: string): Promise<ShopSettings> {
  const [row] = await db.select().from(shopConfigs).where(eq(shopConfigs.wallet, wallet));
  if (row === undefined) return { name: null, processingFeeBps: 0, taxJurisdictions: [], allowedEmbedOrigins: [] };
  return {
    name: row.name,
    processingFeeBps: row.processingFeeBps,
    taxJurisdictions: row.taxJurisdictions,
    allowedEmbedOrigins: row.allowedEmbedOrigins,
  };
}

/** The brand shown on receipts: the shop's name, else the deployment's brand. */
export function brandOf(settings: ShopSettings, fallbackBrand: string): string {
  return settings.name ?? fallbackBrand;
}

export function toShopConfigView(settings: ShopSettings, fallbackBrand: string): ShopConfigView {
  return {
    name: settings.name,
    brandName: brandOf(settings, fallbackBrand),
    processingFeePct: bpsToPct(settings.processingFeeBps),
    taxJurisdictions: settings.taxJurisdictions.map((j) => ({
      code: j.code,
      rate: ppmToRate(BigInt(j.ratePpm)),
      components: j.components,
    })),
    allowedEmbedOrigins: settings.allowedEmbedOrigins,
  };
}

export async function getShopConfig(db: Tx, wallet: string, fallbackBrand: string): Promise<ShopConfigView> {
  return toShopConfigView(await getShopSettings(db, wallet), fallbackBrand);
}

function parseName(value: unknown): string | null {
  if (value === null) return null;
  const name = typeof value === 'string' ? value.trim() : '';
  if (name.length < 1 || name.length > 100) throw new InvalidInput('name must be 1-100 characters');
  return name;
}

/** An embedding origin: scheme, host and port only, as browsers compare them. */
export function parseOrigin(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length > 300) throw new InvalidInput(`${field} must be an http(s) origin`);
  let u: URL;
  try {
    u = new URL(value);
  } catch (err) {
    throw new InvalidInput(`${field} must be an http(s) origin such as https://shop.example (${(err as Error).message})`);
  }
  const bare = u.pathname === '/' && u.search === '' && u.hash === '' && u.username === '' && u.password === '';
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || !bare || !/^https?:\/\/[^/?#]+\/?$/i.test(value)) {
    throw new InvalidInput(`${field} must be an http(s) origin with no path, such as https://shop.example`);
  }
  return u.origin;
}

function parseOrigins(value: unknown): string[] {
  if (!Array.isArray(value)) throw new InvalidInput('allowedEmbedOrigins must be an array of origins');
  if (value.length > MAX_EMBED_ORIGINS) throw new InvalidInput(`allowedEmbedOrigins may hold at most ${MAX_EMBED_ORIGINS} origins`);
  const origins = value.map((v: unknown, i) => parseOrigin(v, `allowedEmbedOrigins[${i}]`));
  return [...new Set(origins)];
}

function parseComponents(value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_COMPONENTS) {
    throw new InvalidInput(`${field} must be an array of at most ${MAX_COMPONENTS} strings`);
  }
  return value.map((c: unknown, i) => {
    const text = typeof c === 'string' ? c.trim() : '';
    if (text.length < 1 || text.length > 64) throw new InvalidInput(`${field}[${i}] must be 1-64 characters`);
    return text;
  });
}

function parseJurisdictions(value: unknown): TaxJurisdiction[] {
  if (!Array.isArray(value)) throw new InvalidInput('taxJurisdictions must be an array');
  if (value.length > MAX_JURISDICTIONS) throw new InvalidInput(`taxJurisdictions may hold at most ${MAX_JURISDICTIONS} entries`);
  const seen = new Set<string>();
  return value.map((entry: unknown, i) => {
    const field = `taxJurisdictions[${i}]`;
    if (typeof entry !== 'object' || entry === null) throw new InvalidInput(`${field} must be {code, rate, components?}`);
    const { code, rate, components } = entry as Record<string, unknown>;
    if (typeof code !== 'string' || !JURISDICTION_CODE.test(code)) {
      throw new InvalidInput(`${field}.code must be 1-32 letters, digits or hyphens`);
    }
    // Orders look codes up without regard to case, so two codes differing only in case would clash.
    if (seen.has(code.toLowerCase())) throw new InvalidInput(`${field}.code ${code} appears twice`);
    seen.add(code.toLowerCase());
    if (typeof rate !== 'number') throw new InvalidInput(`${field}.rate must be a number`);
    const ratePpm = Number(rateToPpm(rate, `${field}.rate`));
    return { code, ratePpm, components: parseComponents(components, `${field}.components`) };
  });
}

/**
 * Stores a shop's configuration (the admin write). processingFeePct is required; fields left out
 * keep their stored values. Returns the settings as stored.
 */
export async function saveShopConfig(db: Tx, wallet: string, input: ShopConfigInput, now = Date.now()): Promise<ShopSettings> {
  if (typeof input !== 'object' || input === null) throw new InvalidInput('The shop configuration must be an object');
  const processingFeeBps = pctToBps(input.processingFeePct, 'processingFeePct');
  const name = input.name === undefined ? undefined : parseName(input.name);
  const origins = input.allowedEmbedOrigins === undefined ? undefined : parseOrigins(input.allowedEmbedOrigins);
  const table = input.taxJurisdictions === undefined ? undefined : parseJurisdictions(input.taxJurisdictions);
  const owner = normalizeWallet(wallet);

  const update = {
    processingFeeBps,
    updatedAt: now,
    ...(name === undefined ? {} : { name }),
    ...(origins === undefined ? {} : { allowedEmbedOrigins: origins }),
    ...(table === undefined ? {} : { taxJurisdictions: table }),
  };
  const [row] = await db
    .insert(shopConfigs)
    .values({
      wallet: owner,
      name: name ?? null,
      processingFeeBps,
      taxJurisdictions: table ?? [],
      allowedEmbedOrigins: origins ?? [],
      updatedAt: now,
    })
    .onConflictDoUpdate({ target: shopConfigs.wallet, set: update })
    .returning();
  if (row === undefined) throw new Error('shop configuration upsert returned no row');
  return {
    name: row.name,
    processingFeeBps: row.processingFeeBps,
    taxJurisdictions: row.taxJurisdictions,
    allowedEmbedOrigins: row.allowedEmbedOrigins,
  };
}
