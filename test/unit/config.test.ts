/**
 * The security settings of src/config.ts: what NODE_ENV=production refuses (each problem listed
 * at once), and TRUST_PROXY's forms.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

const SECRET_32 = 'x'.repeat(32);
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

  test('JWT_SECRET is counted in bytes: 31 are refused, 32 pass, and so do 11 three-byte characters (33 bytes)', () => {
    const base = { NODE_ENV: 'production', CHAIN: 'base', RPC_URL: 'https://rpc.example' };
    assert.equal(problemsOf({ ...base, JWT_SECRET: 'x'.repeat(31) }).length, 1);
    assert.deepEqual(problemsOf({ ...base, JWT_SECRET: SECRET_32 }), []);
    assert.deepEqual(problemsOf({ ...base, JWT_SECRET: '€'.repeat(11) }), []);
    assert.match(problemsOf({ ...base })[0]!, /JWT_SECRET is required/);
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
