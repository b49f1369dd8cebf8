import { useState, type FormEvent } from 'react';
import { WEBHOOK_EVENTS, webhooks } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { ErrorNote, Field, Loading, PageHeader, Secret } from '../components/ui.tsx';

/** Every delivery with each attempt, and a button to send one again. */
function Deliveries() {
  const list = useLoad(() => webhooks.deliveries());
  const again = useSubmit();
  const rows = list.data?.deliveries ?? [];
  return (
    <>
      <div className="sub-head">
        <h2>Deliveries</h2>
        <button type="button" className="btn btn-small" onClick={() => list.reload()}>
          Refresh
        </button>
      </div>
      <ErrorNote message={list.error ?? again.error} />
      {list.loading && list.data === null ? (
        <Loading what="deliveries" />
      ) : rows.length === 0 ? (
        <p className="empty">No deliveries yet.</p>
      ) : (
        <div className="list">
          {rows.map((d) => (
            <article key={d.id} className="card sub" data-testid="delivery">
              <header className="sub-head">
                <h3>
                  {d.type} <span className="chip">{d.status}</span>
                </h3>
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={again.busy}
                  onClick={() =>
                    void again.run(async () => {
                      await webhooks.redeliver(d.id);
                      list.reload();
                    })
                  }
                >
                  Redeliver
                </button>
              </header>
              <p className="muted small mono break">
                {d.eventId} · {d.attempts} attempt{d.attempts === 1 ? '' : 's'}
                {d.status === 'pending' && d.attempts > 0 ? ` · next ${formatDateTime(d.nextAttemptAt)}` : ''}
              </p>
              <ul className="small">
                {d.log.map((a) => (
                  <li key={a.at}>
                    {formatDateTime(a.at)}: {a.statusCode ?? 'no answer'} in {a.durationMs} ms{a.error !== null ? ` (${a.error})` : ''}
                  </li>
                ))}
              </ul>
            </article>
          ))}
        </div>
      )}
    </>
  );
}

export function Webhooks() {
  const list = useLoad(() => webhooks.list());
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([...WEBHOOK_EVENTS]);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = useSubmit();
  const remove = useSubmit();

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
          <p className="note note-warn">
            <strong>Copy it now: it won&apos;t be shown again.</strong> Your server uses it to verify each request.
          </p>
          <Secret label="Secret" value={secret.secret} />
          <button type="button" className="btn" onClick={() => setSecret(null)}>
            I have copied it
          </button>
        </div>
      )}
      <form className="card form" onSubmit={onSubmit} noValidate>
        <h2>Add an endpoint</h2>
        <Field label="Endpoint URL" error={errors.url}>
          {(id, invalid) => <input id={id} name="url" type="url" placeholder="https://example.com/hooks/splitline" value={url} aria-invalid={invalid} onChange={(e) => setUrl(e.target.value)} />}
        </Field>
        <fieldset>
          <legend>Events</legend>
          {WEBHOOK_EVENTS.map((ev) => (
            <label key={ev} className="check">
              <input type="checkbox" checked={events.includes(ev)} onChange={(e) => setEvents(e.target.checked ? [...events, ev] : events.filter((x) => x !== ev))} /> {ev}
            </label>
          ))}
          {errors.events !== undefined && <span className="field-error">{errors.events}</span>}
        </fieldset>
        <ErrorNote message={submit.error} />
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={submit.busy}>
            {submit.busy ? 'Adding…' : 'Add endpoint'}
          </button>
        </div>
      </form>
      <h2>Endpoints</h2>
      <ErrorNote message={list.error ?? remove.error} />
      {list.loading && list.data === null ? (
        <Loading what="endpoints" />
      ) : (list.data?.webhooks ?? []).length === 0 ? (
        <p className="empty">No endpoints yet.</p>
      ) : (
        <div className="list">
          {(list.data?.webhooks ?? []).map((w) => (
            <article key={w.id} className="card sub" data-testid="webhook">
              <header className="sub-head">
                <h3 className="mono break">{w.url}</h3>
                <button
                  type="button"
                  className="btn btn-danger-ghost btn-small"
                  disabled={remove.busy}
                  onClick={() =>
                    void remove.run(async () => {
                      await webhooks.remove(w.id);
                      list.reload();
                    })
                  }
                >
                  Delete
                </button>
              </header>
              <p className="scopes">
                {w.events.map((e) => (
                  <span key={e} className="chip">
                    {e}
                  </span>
                ))}
              </p>
              <p className="muted small">Added {formatDateTime(w.createdAt)}</p>
            </article>
          ))}
        </div>
      )}
      <Deliveries />
    </section>
  );
}
