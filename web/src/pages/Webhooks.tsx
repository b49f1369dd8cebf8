import { useEffect, useRef, useState, type FormEvent } from 'react';
import { WEBHOOK_EVENTS, webhooks, type Delivery, type DeliveryAttempt, type Webhook, type WebhookTargets } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { messageOf } from '../lib/http.ts';
import { useLoad, useSubmit, type Loaded } from '../lib/hooks.ts';
import { Button, Check, Chip, Chips, Empty, ErrorNote, Field, Fieldset, FormActions, Loading, Notice, PageHeader, receiptPath, Secret, SectionHead, Table, type Column } from '../components/ui.tsx';

/** One attempt in words: the answer's status, or why none came (the raw code in the title). */
function attemptText(a: DeliveryAttempt): string {
  if (a.statusCode !== null) return `${a.statusCode} in ${a.durationMs} ms`;
  return a.errorText ?? a.error ?? 'no answer';
}

/** Which targets the service accepts besides public https URLs. */
function TargetsNote(props: { targets: WebhookTargets | undefined }) {
  if (props.targets === undefined) return null;
  if (props.targets.private) {
    return (
      <Notice kind="warn">
        This service accepts any target, private network addresses included (<code>WEBHOOK_ALLOW_PRIVATE</code>, meant for tests).
      </Notice>
    );
  }
  if (props.targets.loopback) {
    return (
      <Notice>
        <span data-testid="webhook-targets">
          This service runs on the dev chain, so endpoints on this computer are accepted for testing:{' '}
          <code>http://localhost:…</code> and <code>http://127.0.0.1:…</code>. In production only public <code>https</code> URLs are
          accepted; loopback and private network addresses are refused.
        </span>
      </Notice>
    );
  }
  return (
    <Notice>
      <span data-testid="webhook-targets">
        Endpoints must be public <code>https</code> URLs. Loopback (<code>localhost</code>, <code>127.0.0.1</code>) and private network
        addresses are refused; loopback is accepted only while the service runs on the dev chain.
      </span>
    </Notice>
  );
}

type TestResult = { kind: 'ok' | 'info' | 'warn'; text: string };

/** How the test delivery went, once it has an attempt. */
function testOutcome(d: Delivery): TestResult {
  const a = d.log[0];
  if (d.status === 'delivered' && a !== undefined) return { kind: 'ok', text: `Delivered: your endpoint answered ${a.statusCode} in ${a.durationMs} ms.` };
  if (a === undefined) return { kind: 'info', text: 'Waiting to be sent…' };
  if (a.statusCode !== null) return { kind: 'warn', text: `Not accepted: your endpoint answered ${a.statusCode}; a 2xx status is needed.` };
  return { kind: 'warn', text: `Not delivered: ${a.errorText ?? a.error ?? 'no answer'}.` };
}

const sleep = (ms: number) => new Promise((resolve) => window.setTimeout(resolve, ms));

/** "Send test event": queues one, then follows its delivery until it has a result. */
function SendTest(props: { endpointId: string; onSent: () => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<TestResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  const send = async () => {
    setBusy(true);
    setError(null);
    setResult({ kind: 'info', text: 'Sending a test event…' });
    try {
      const { deliveryId } = await webhooks.sendTest(props.endpointId);
      // The dispatcher picks it up within a second; an endpoint that never answers takes until its timeout.
      const deadline = Date.now() + 20_000;
      for (;;) {
        await sleep(500);
        if (!mounted.current) return;
        const d = (await webhooks.deliveries()).deliveries.find((x) => x.id === deliveryId);
        if (d !== undefined && d.log.length > 0) {
          setResult(testOutcome(d));
          break;
        }
        if (Date.now() > deadline) {
          setResult({ kind: 'info', text: 'Queued but not sent yet; its result will appear under Deliveries.' });
          break;
        }
      }
      props.onSent();
    } catch (err) {
      if (!mounted.current) return;
      setResult(null);
      setError(messageOf(err));
    } finally {
      if (mounted.current) setBusy(false);
    }
  };

  return (
    <div data-testid="webhook-test">
      <Button size="small" busy={busy} busyLabel="Sending…" onClick={() => void send()}>
        Send test event
      </Button>
      <div data-testid="webhook-test-result" aria-live="polite">
        {result !== null && <Notice kind={result.kind}>{result.text}</Notice>}
        <ErrorNote message={error} />
      </div>
    </div>
  );
}

/** A delivery's columns; `urlOf` names its endpoint, `redeliver` sends it again. */
function deliveryColumns(urlOf: (endpointId: string) => string, redeliver: (d: Delivery) => void, busy: boolean): Column<Delivery>[] {
  return [
    {
      header: 'Event',
      cell: (d) => (
        <>
          <span className="mono">{d.type}</span>
          <br />
          <span className="muted small mono break">{d.eventId}</span>
        </>
      ),
    },
    {
      header: 'Receipt',
      testId: 'delivery-receipt',
      cell: (d) => d.receiptId ?? <span className="muted">—</span>,
      link: (d) => (d.receiptId === null ? null : receiptPath(d.receiptId)),
    },
    // The wrapping is the URL's own, not the cell's: the phone layout's label stays whole.
    { header: 'Endpoint', cell: (d) => <span className="mono small break">{urlOf(d.endpointId)}</span> },
    {
      header: 'Status',
      cell: (d) => (
        <span>
          <Chip>{d.status}</Chip>
          {d.status === 'pending' && d.attempts > 0 && <span className="muted small"> next {formatDateTime(d.nextAttemptAt)}</span>}
        </span>
      ),
    },
    {
      header: 'Attempts',
      cell: (d) =>
        d.log.length === 0 ? (
          <span className="muted small">none yet</span>
        ) : (
          <ul className="small" data-testid="delivery-attempts">
            {d.log.map((a) => (
              <li key={a.at} title={a.error ?? undefined}>
                {formatDateTime(a.at)}: {attemptText(a)}
                {a.errorCode !== null && <span className="muted mono"> ({a.errorCode})</span>}
              </li>
            ))}
          </ul>
        ),
    },
    {
      header: 'Actions',
      hiddenHeader: true,
      actions: true,
      cell: (d) => (
        <Button size="small" disabled={busy} onClick={() => redeliver(d)}>
          Redeliver
        </Button>
      ),
    },
  ];
}

/** Every delivery with each attempt, and a button to send one again. */
function Deliveries(props: { list: Loaded<{ deliveries: Delivery[] }>; endpoints: Webhook[] }) {
  const { list } = props;
  const again = useSubmit();
  const rows = list.data?.deliveries ?? [];
  const urlOf = (id: string) => props.endpoints.find((w) => w.id === id)?.url ?? id;
  const redeliver = (d: Delivery) =>
    void again.run(async () => {
      await webhooks.redeliver(d.id);
      list.reload();
    });
  return (
    <>
      <SectionHead title="Deliveries">
        <Button size="small" onClick={() => list.reload()}>
          Refresh
        </Button>
      </SectionHead>
      <ErrorNote message={list.error ?? again.error} />
      {list.loading && list.data === null ? (
        <Loading what="deliveries" />
      ) : (
        <Table
          columns={deliveryColumns(urlOf, redeliver, again.busy)}
          rows={rows}
          rowKey={(d) => d.id}
          rowData={(d) => ({ 'data-testid': 'delivery', 'data-delivery': d.id })}
          empty="No deliveries yet."
          testId="deliveries"
        />
      )}
    </>
  );
}

export function Webhooks() {
  const list = useLoad(() => webhooks.list());
  const deliveries = useLoad(() => webhooks.deliveries());
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([...WEBHOOK_EVENTS]);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = useSubmit();
  const remove = useSubmit();
  const endpoints = list.data?.webhooks ?? [];
  const targets = list.data?.targets;

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    let parsed: URL | null = null;
    try {
      parsed = new URL(url.trim());
    } catch (err) {
      errs.url = `Not a URL (${(err as Error).message})`;
    }
    if (parsed !== null && parsed.protocol !== 'https:' && parsed.protocol !== 'http:') errs.url = 'An http(s) URL';
    if (events.length === 0) errs.events = 'Choose at least one event';
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    void submit.run(async () => {
      const created = await webhooks.create({ url: url.trim(), events });
      setSecret({ url: created.url, secret: created.secret });
      setUrl('');
      list.reload();
    });
  };

  return (
    <section>
      <PageHeader title="Webhooks" subtitle="Your server is told when a receipt is paid, refunded or paid wrongly. Requests are signed (Standard Webhooks)." />
      {secret !== null && (
        <div className="card card-highlight" data-testid="webhook-secret">
          <h2>Signing secret for {secret.url}</h2>
          <Notice kind="warn" role={null}>
            <strong>Copy it now: it won&apos;t be shown again.</strong> Your server uses it to verify each request.
          </Notice>
          <Secret label="Secret" value={secret.secret} />
          <Button onClick={() => setSecret(null)}>I have copied it</Button>
        </div>
      )}
      <form className="card form" onSubmit={onSubmit} noValidate>
        <h2>Add an endpoint</h2>
        <TargetsNote targets={targets} />
        <Field label="Endpoint URL" error={errors.url}>
          {(id, invalid) => (
            <input
              id={id}
              name="url"
              type="url"
              placeholder={targets?.loopback ? 'http://localhost:3000/hooks/splitline' : 'https://example.com/hooks/splitline'}
              value={url}
              aria-invalid={invalid}
              onChange={(e) => setUrl(e.target.value)}
            />
          )}
        </Field>
        <Fieldset legend="Events" error={errors.events}>
          {WEBHOOK_EVENTS.map((ev) => (
            <Check key={ev} label={ev} checked={events.includes(ev)} onChange={(on) => setEvents(on ? [...events, ev] : events.filter((x) => x !== ev))} />
          ))}
        </Fieldset>
        <ErrorNote message={submit.error} />
        <FormActions>
          <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Adding…">
            Add endpoint
          </Button>
        </FormActions>
      </form>
      <h2>Endpoints</h2>
      <ErrorNote message={list.error ?? remove.error} />
      {list.loading && list.data === null ? (
        <Loading what="endpoints" />
      ) : endpoints.length === 0 ? (
        <Empty>No endpoints yet.</Empty>
      ) : (
        <div className="list">
          {endpoints.map((w) => (
            <article key={w.id} className="card sub" data-testid="webhook">
              <SectionHead title={w.url} level={3} titleClassName="mono break">
                <Button
                  variant="danger-ghost"
                  size="small"
                  disabled={remove.busy}
                  onClick={() =>
                    void remove.run(async () => {
                      await webhooks.remove(w.id);
                      list.reload();
                    })
                  }
                >
                  Delete
                </Button>
              </SectionHead>
              <Chips values={w.events} />
              <p className="muted small">Added {formatDateTime(w.createdAt)}</p>
              <SendTest endpointId={w.id} onSent={() => deliveries.reload()} />
            </article>
          ))}
        </div>
      )}
      <Deliveries list={deliveries} endpoints={endpoints} />
    </section>
  );
}
