import { useState, type FormEvent } from 'react';
import { PRODUCTS, subscriptions, type Subscription } from '../lib/api.ts';
import { formatDateTime } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Badge, Button, Chips, Empty, ErrorNote, Field, FormActions, Loading, Notice, PageHeader, Secret, SectionHead } from '../components/ui.tsx';

type Shown = { title: string; keys: { label: string; value: string }[] };

export function Keys() {
  const list = useLoad(() => subscriptions.list());
  const [shown, setShown] = useState<Shown | null>(null);
  const subs = list.data?.subscriptions ?? [];
  return (
    <section>
      <PageHeader title="API keys" subtitle="Subscription keys let your own software call the developer API for this shop." />
      {shown !== null && <KeysOnce shown={shown} onDismiss={() => setShown(null)} />}
      <CreateKey
        onCreated={(c) => {
          setShown({
            title: `Keys for “${c.name}”`,
            keys: [
              { label: 'Primary key', value: c.primaryKey },
              { label: 'Secondary key', value: c.secondaryKey },
            ],
          });
          list.reload();
        }}
      />
      <h2>Your subscriptions</h2>
      <ErrorNote message={list.error} />
      {list.loading && list.data === null ? (
        <Loading what="subscriptions" />
      ) : subs.length === 0 ? (
        <Empty>No subscriptions yet.</Empty>
      ) : (
        <div className="list">
          {subs.map((s) => (
            <SubscriptionCard
              key={s.id}
              sub={s}
              onRotated={(slot, key) => {
                setShown({ title: `New ${slot} key for “${s.name}”`, keys: [{ label: `${slot[0]?.toUpperCase()}${slot.slice(1)} key`, value: key }] });
                list.reload();
              }}
              onRevoked={list.reload}
            />
          ))}
        </div>
      )}
    </section>
  );
}

function KeysOnce(props: { shown: Shown; onDismiss: () => void }) {
  return (
    <div className="card card-highlight" role="region" aria-label="New keys" data-testid="new-keys">
      <h2>{props.shown.title}</h2>
      <Notice kind="warn" role={null}>
        <strong>Copy these now: they won&apos;t be shown again.</strong> Only a fingerprint is stored. If you lose a key,
        rotate it.
      </Notice>
      {props.shown.keys.map((k) => (
        <Secret key={k.label} label={k.label} value={k.value} testId={`key-${k.label.split(' ')[0]?.toLowerCase()}`} />
      ))}
      <Button onClick={props.onDismiss}>I have copied them</Button>
    </div>
  );
}

function CreateKey(props: { onCreated: (c: { name: string; primaryKey: string; secondaryKey: string }) => void }) {
  const [name, setName] = useState('');
  const [product, setProduct] = useState<string>('full');
  const [nameError, setNameError] = useState<string | null>(null);
  const submit = useSubmit();
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    if (name.trim().length > 100) {
      setNameError('At most 100 characters');
      return;
    }
    setNameError(null);
    void submit.run(async () => {
      const created = await subscriptions.create({ product, ...(name.trim() === '' ? {} : { name: name.trim() }) });
      setName('');
      props.onCreated(created);
    });
  };
  return (
    <form className="card form form-inline" onSubmit={onSubmit} noValidate>
      <Field label="Name" hint="Where you will use it, e.g. Online store" error={nameError}>
        {(id, invalid) => <input id={id} name="name" value={name} aria-invalid={invalid} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field label="Access">
        {(id) => (
          <select id={id} name="product" value={product} onChange={(e) => setProduct(e.target.value)}>
            {PRODUCTS.map((p) => (
              <option key={p.name} value={p.name}>
                {p.name}: {p.description}
              </option>
            ))}
          </select>
        )}
      </Field>
      <FormActions>
        <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Creating…">
          Create key
        </Button>
      </FormActions>
      <ErrorNote message={submit.error} />
    </form>
  );
}

function SubscriptionCard(props: { sub: Subscription; onRotated: (slot: string, key: string) => void; onRevoked: () => void }) {
  const s = props.sub;
  const [confirming, setConfirming] = useState(false);
  const submit = useSubmit();
  const active = s.status === 'active';
  return (
    <article className={`card sub${active ? '' : ' sub-revoked'}`} data-testid="subscription" data-status={s.status}>
      <SectionHead title={s.name} level={3}>
        <Badge tone={active ? 'ok' : 'bad'}>{s.status}</Badge>
      </SectionHead>
      <p className="muted small">
        {s.product} · {s.rateLimitPerMinute} requests/min · created {formatDateTime(s.createdAt)}
        {s.revokedAt !== null && ` · revoked ${formatDateTime(s.revokedAt)}`}
      </p>
      <Chips values={s.scopes} />
      {active && (
        <ul className="key-slots">
          {s.keys.map((k) => (
            <li key={k.slot}>
              <span className="secret-label">{k.slot}</span>
              <code>{k.prefix}…</code>
              <Button
                size="small"
                disabled={submit.busy}
                onClick={() =>
                  void submit.run(async () => {
                    const slot = k.slot === 'secondary' ? 'secondary' : 'primary';
                    const res = await subscriptions.rotate(s.id, slot);
                    props.onRotated(slot, res.key);
                  })
                }
              >
                Rotate
              </Button>
            </li>
          ))}
        </ul>
      )}
      <ErrorNote message={submit.error} />
      {active &&
        (confirming ? (
          <div className="confirm">
            <span>Revoke both keys? Calls using them will fail at once.</span>
            <Button
              variant="danger"
              size="small"
              disabled={submit.busy}
              onClick={() =>
                void submit.run(async () => {
                  await subscriptions.revoke(s.id);
                  setConfirming(false);
                  props.onRevoked();
                })
              }
            >
              Yes, revoke
            </Button>
            <Button variant="ghost" size="small" onClick={() => setConfirming(false)}>
              Cancel
            </Button>
          </div>
        ) : (
          <Button variant="danger-ghost" size="small" onClick={() => setConfirming(true)}>
            Revoke
          </Button>
        ))}
    </article>
  );
}
