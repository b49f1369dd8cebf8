/**
 * The security settings of src/config.ts: what NODE_ENV=production refuses (each problem listed
 * at once), and TRUST_PROXY's forms.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { ConfigError, configWarnings, loadConfig } from '../../src/config.ts';

/** 32 bytes that look like a secret (distinct and irregular enough). */
const SECRET_32 = randomBytes(24).toString('base64');
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('NODE_ENV=production refuses unsafe settings', () => {
  test('CHAIN=dev, WEBHOOK_ALLOW_PRIVATE=true and a short JWT_SECRET are each listed, all at once', () => {
    const problems = problemsOf({ NODE_ENV: 'production', CHAIN: 'dev', WEBHOOK_ALLOW_PRIVATE: 'true', JWT_SECRET: 'x' });
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems[0]!, /^CHAIN=dev .* refused when NODE_ENV=production/);
    assert.match(problems[1]!, /^WEBHOOK_ALLOW_PRIVATE=true is refused when NODE_ENV=production/);
    assert.match(problems[2]!, /^JWT_SECRET must be at least 32 bytes when NODE_ENV=production \(got 1\)/);
  });

  test('the default chain is the dev chain, so production must name its chain', () => {
    const problems = problemsOf({ NODE_ENV: 'production', JWT_SECRET: SECRET_32 });
    assert.deepEqual(problems.length, 1);
    assert.match(problems[0]!, /CHAIN=dev \(the default/);
  });

  test('JWT_SECRET is counted in bytes: 31 are refused, 32 pass, and so do 11 three-byte characters (33 bytes) of a random text', () => {
    const base = { NODE_ENV: 'production', CHAIN: 'base', RPC_URL: 'https://rpc.example' };
    assert.equal(problemsOf({ ...base, JWT_SECRET: SECRET_32.slice(0, 31) }).length, 1);
    assert.deepEqual(problemsOf({ ...base, JWT_SECRET: SECRET_32 }), []);
    const chars = [...'€£¥₩₽₹₪₫₴₸₺'];
    assert.deepEqual(problemsOf({ ...base, JWT_SECRET: chars.join('') + SECRET_32.slice(0, 8) }), []);
    assert.match(problemsOf({ ...base })[0]!, /JWT_SECRET is required/);
  });

  test('a JWT_SECRET of 32 bytes or more with few distinct bytes or little entropy is refused', () => {
    const base = { NODE_ENV: 'production', CHAIN: 'base', RPC_URL: 'https://rpc.example' };
    for (const weak of ['a'.repeat(32), 'ab'.repeat(16), 'abcdefgh'.repeat(4), 'x'.repeat(64), '0123'.repeat(20)]) {
      const problems = problemsOf({ ...base, JWT_SECRET: weak });
      assert.equal(problems.length, 1, weak);
      assert.match(problems[0]!, /^JWT_SECRET is too regular to be a secret/);
    }
    // What the docs suggest passes, every time.
    for (let i = 0; i < 200; i++) {
      assert.deepEqual(problemsOf({ ...base, JWT_SECRET: randomBytes(32).toString('hex') }), []);
      assert.deepEqual(problemsOf({ ...base, JWT_SECRET: randomBytes(32).toString('base64') }), []);
    }
    // Outside production a weak secret is the developer's business.
    assert.deepEqual(problemsOf({ JWT_SECRET: 'a'.repeat(32) }), []);
  });

  test('an http: SITE_URL in production is warned about unless a proxy ends TLS', () => {
    const base = { NODE_ENV: 'production', CHAIN: 'base', RPC_URL: 'https://rpc.example', JWT_SECRET: SECRET_32 };
    const warned = configWarnings(loadConfig({ ...base, SITE_URL: 'http://pay.example' }));
    assert.equal(warned.length, 1);
    assert.match(warned[0]!, /SITE_URL is http:\/\/pay\.example/);
    assert.deepEqual(configWarnings(loadConfig({ ...base, SITE_URL: 'http://pay.example', TRUST_PROXY: '1' })), []);
    assert.deepEqual(configWarnings(loadConfig({ ...base, SITE_URL: 'https://pay.example' })), []);
    assert.deepEqual(configWarnings(loadConfig({ SITE_URL: 'http://localhost:8080' })), []);
  });

  test('a safe production configuration starts; outside production the same settings are allowed', () => {
    const config = loadConfig({ NODE_ENV: 'production', CHAIN: 'base-sepolia', RPC_URL: 'https://rpc.example', JWT_SECRET: SECRET_32 });
    assert.equal(config.webhookAllowPrivate, false);
    assert.deepEqual(problemsOf({ CHAIN: 'dev', WEBHOOK_ALLOW_PRIVATE: 'true', JWT_SECRET: 'x' }), []);
  });
});

describe('TRUST_PROXY', () => {
  test('none by default', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '0' }).trustProxy, false);
    assert.equal(loadConfig({ EDGE_SECRET: 'edge' }).trustProxy, false, 'EDGE_SECRET alone trusts no hop');
  });

  test('a hop count, or addresses, CIDR ranges and proxy-addr names', () => {
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.1,fd00::/8, ::1, loopback' }).trustProxy, [
      '10.0.0.0/8',
      '192.168.1.1',
      'fd00::/8',
      '::1',
      'loopback',
    ]);
  });

  test('true (every hop), nonsense and out-of-range values are refused, naming the bad parts', () => {
    assert.match(problemsOf({ TRUST_PROXY: 'true' })[0]!, /TRUST_PROXY=true would believe every X-Forwarded-For hop/);
    assert.match(problemsOf({ TRUST_PROXY: '21' })[0]!, /hop count must be from 1 to 20/);
    assert.match(problemsOf({ TRUST_PROXY: '10.0.0.0/33, proxy.example, 10.0.0.1' })[0]!, /bad: "10.0.0.0\/33", "proxy.example"/);
    assert.match(problemsOf({ TRUST_PROXY: '::1/129' })[0]!, /bad: "::1\/129"/);
  });
});
