/**
 * Users: search and presence (key), the signed-in wallet's profile and heartbeat (session), and
 * the superadmin's import (POST /api/admin/users).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Degraded, Nullable, Wallet } from './common.ts';

/** Limits src/domain/users.ts applies. */
export const PRESENCE_WINDOW_MS = 120_000;
export const LIVE_LIST_CAP = 200;
export const SEARCH_LIMIT_DEFAULT = 25;
export const SEARCH_LIMIT_MAX = 100;
export const SEARCH_SCAN_DEFAULT = 400;
export const SEARCH_SCAN_MAX = 1000;
export const IMPORT_MAX_USERS = 5000;

export const PRESENCE_RULE = `live is true, spacePublic is true and lastHeartbeat lies within the last ${PRESENCE_WINDOW_MS / 60_000} minutes`;

export const User = Type.Object({
  wallet: Wallet,
  displayName: Type.String({ examples: ['Ada'] }),
  pfpUrl: Nullable(Type.String({ description: 'URL; null when the user has no picture' })),
  xp: Type.Number({ minimum: 0, examples: [1200] }),
  live: Type.Boolean({ description: `The presence rule's result: ${PRESENCE_RULE}` }),
  lastSeen: Nullable(Type.Integer({ description: 'Unix ms; null when never seen. For a user whose space is not public, the start of that UTC day' })),
  lastHeartbeat: Nullable(
    Type.Integer({ description: 'Unix ms; null when no heartbeat was ever received. For a user whose space is not public, the start of that UTC day' }),
  ),
  domains: Type.Array(Type.String()),
  platforms: Type.Array(Type.String()),
  languages: Type.Array(Type.String()),
});
export type User = Static<typeof User>;

export const LiveUser = Type.Object({
  wallet: Wallet,
  displayName: Type.String({ examples: ['Ada'] }),
  pfpUrl: Nullable(Type.String({ description: 'URL; null when the user has no picture' })),
  spaceUrl: Nullable(Type.String({ description: 'URL; null when none was set' })),
  liveSince: Nullable(Type.Integer({ description: 'Unix ms; null when unknown' })),
  lastHeartbeat: Type.Integer({ description: 'Unix ms' }),
  languages: Type.Array(Type.String()),
  domains: Type.Array(Type.String()),
  platform: Nullable(Type.String()),
});
export type LiveUser = Static<typeof LiveUser>;

const tagList = (what: string, example: string) =>
  Type.Optional(
    Type.String({ maxLength: 1000, description: `Comma-separated ${what}; the user must have all (case-insensitive)`, examples: [example] }),
  );

export const SearchUsersQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 200, description: 'Case-insensitive substring of the wallet or displayName', examples: ['ada'] }),
  ),
  domains: tagList('domains', 'defi'),
  platforms: tagList('platforms', 'web'),
  languages: tagList('languages', 'en'),
  minXp: Type.Optional(Type.Number({ minimum: 0, examples: [100] })),
  maxXp: Type.Optional(Type.Number({ minimum: 0, examples: [5000] })),
  live: Type.Optional(Type.Boolean({ description: `true: only users currently live (${PRESENCE_RULE})`, examples: [false] })),
  limit: Type.Optional(
    Type.Number({ description: `Default ${SEARCH_LIMIT_DEFAULT}; clamped to 1..${SEARCH_LIMIT_MAX}`, examples: [SEARCH_LIMIT_DEFAULT] }),
  ),
  scan: Type.Optional(
    Type.Number({
      description: `Users scanned (highest XP first) before filtering. Default ${SEARCH_SCAN_DEFAULT}; clamped to limit..${SEARCH_SCAN_MAX}`,
      examples: [SEARCH_SCAN_DEFAULT],
    }),
  ),
});
export type SearchUsersQuery = Static<typeof SearchUsersQuery>;

export const UserSearchResult = Type.Object(
  { users: Type.Array(User), total: Type.Integer({ minimum: 0, description: 'Scanned users that passed every filter' }), ...Degraded },
  { description: 'The matching users, highest XP first; empty with degraded: true while the database is unreachable' },
);
export type UserSearchResult = Static<typeof UserSearchResult>;

export const LiveUsers = Type.Object(
  { live: Type.Array(LiveUser), ...Degraded },
  { description: 'Users live now, freshest heartbeat first; empty with degraded: true while the database is unreachable' },
);
export type LiveUsers = Static<typeof LiveUsers>;

// The signed-in wallet's own profile

export const Profile = Type.Object({
  wallet: Wallet,
  displayName: Type.String({ examples: ['Ada'] }),
  pfpUrl: Type.Union([Type.String(), Type.Null()]),
  xp: Type.Number({ minimum: 0, examples: [1200] }),
  live: Type.Boolean({ description: 'The presence rule: live, spacePublic and a heartbeat within 2 minutes' }),
  spacePublic: Type.Boolean(),
  spaceUrl: Type.Union([Type.String(), Type.Null()]),
  platform: Type.Union([Type.String(), Type.Null()]),
  liveSince: Type.Union([Type.Integer(), Type.Null()]),
  lastSeen: Type.Union([Type.Integer(), Type.Null()]),
  lastHeartbeat: Type.Union([Type.Integer(), Type.Null()]),
  domains: Type.Array(Type.String()),
  platforms: Type.Array(Type.String()),
  languages: Type.Array(Type.String()),
});
export type Profile = Static<typeof Profile>;

/** The profile, described for the answer it is. */
export const ProfileAnswer = (description: string) => Type.Object(Profile.properties, { description });

export const UpdateProfileBody = Type.Object(
  {
    displayName: Type.Optional(Type.String({ maxLength: 100 })),
    pfpUrl: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    spacePublic: Type.Optional(Type.Boolean()),
    spaceUrl: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    domains: Type.Optional(Type.Array(Type.String())),
    platforms: Type.Optional(Type.Array(Type.String())),
    languages: Type.Optional(Type.Array(Type.String())),
    platform: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  },
  { additionalProperties: false, examples: [{ displayName: 'Ada', spacePublic: true, languages: ['en'] }] },
);
export type UpdateProfileBody = Static<typeof UpdateProfileBody>;

export const HeartbeatBody = Type.Object(
  {
    live: Type.Optional(Type.Boolean({ description: 'false ends the live session; true by default' })),
    spaceUrl: Type.Optional(Type.String({ description: 'An http(s) URL' })),
    platform: Type.Optional(Type.String()),
  },
  { examples: [{ live: true, spaceUrl: 'https://space.example/ada', platform: 'web' }] },
);
export type HeartbeatBody = Static<typeof HeartbeatBody>;

// POST /api/admin/users

const orNull = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));
const UnixMs = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Unix ms' });
const HttpUrl = Type.String({ maxLength: 2048, description: 'An http(s) URL' });
const Tags = Type.Array(Type.String({ pattern: '\\S', description: 'At most 64 characters once trimmed' }), { maxItems: 50 });

/**
 * One imported user: the User fields of the specification plus spacePublic, spaceUrl, liveSince
 * and platform (parseUserRecord in src/domain/users.ts, which checks the rest). A field left out
 * or null takes its default (empty, false, 0).
 */
export const ImportedUser = Type.Object({
  wallet: Wallet,
  displayName: orNull(Type.String({ maxLength: 100 })),
  pfpUrl: orNull(HttpUrl),
  xp: orNull(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  live: orNull(Type.Boolean()),
  spacePublic: orNull(Type.Boolean({ description: 'The presence rule needs it: only public users are listed as live' })),
  spaceUrl: orNull(HttpUrl),
  platform: orNull(Type.String({ maxLength: 64 })),
  liveSince: orNull(UnixMs),
  lastSeen: orNull(UnixMs),
  lastHeartbeat: orNull(UnixMs),
  domains: orNull(Tags),
  platforms: orNull(Tags),
  languages: orNull(Tags),
});
export type ImportedUser = Static<typeof ImportedUser>;

export const ImportUsersBody = Type.Array(ImportedUser, {
  maxItems: IMPORT_MAX_USERS,
  examples: [
    [
      {
        wallet: '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
        displayName: 'Ada',
        pfpUrl: 'https://cdn.example/ada.png',
        xp: 1200,
        live: true,
        spacePublic: true,
        spaceUrl: 'https://space.example/ada',
        platform: 'web',
        liveSince: 1767225600000,
        lastSeen: 1767225600000,
        lastHeartbeat: 1767225600000,
        domains: ['defi'],
        platforms: ['web'],
        languages: ['en'],
      },
    ],
  ],
});
export type ImportUsersBody = Static<typeof ImportUsersBody>;

export const UsersImported = Type.Object(
  { ok: Type.Literal(true), upserted: Type.Integer({ minimum: 0, description: 'Distinct wallets written' }) },
  { description: 'Imported' },
);
export type UsersImported = Static<typeof UsersImported>;
