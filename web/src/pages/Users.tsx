import { useState, type FormEvent } from 'react';
import { users, type User, type UserQuery } from '../lib/api.ts';
import { formatDateTime, shortAddress } from '../lib/format.ts';
import { useLoad, useSubmit } from '../lib/hooks.ts';
import { Badge, Button, Check, Empty, ErrorNote, Field, FormActions, Loading, Notice, PageHeader, SectionHead, Table, type Column } from '../components/ui.tsx';

const XP = /^\d{1,12}$/;

const USER_COLUMNS: Column<User>[] = [
  {
    header: 'User',
    cell: (u) => (
      <>
        <strong>{u.displayName || shortAddress(u.wallet)}</strong>
        {u.live && <Badge tone="ok">live</Badge>}
        <div className="mono muted small">{shortAddress(u.wallet)}</div>
      </>
    ),
  },
  { header: 'XP', num: true, cell: (u) => u.xp.toLocaleString() },
  { header: 'Skills', className: 'small', cell: (u) => [...u.domains, ...u.platforms, ...u.languages].join(', ') || '—' },
  { header: 'Last seen', className: 'small', cell: (u) => (u.lastSeen === null ? 'never' : formatDateTime(u.lastSeen)) },
];

export function Users() {
  const live = useLoad(() => users.live());
  const [form, setForm] = useState({ q: '', domains: '', platforms: '', languages: '', minXp: '', maxXp: '', liveOnly: false });
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [result, setResult] = useState<{ users: User[]; total: number; degraded: boolean } | null>(null);
  const submit = useSubmit();
  const set = (patch: Partial<typeof form>) => setForm({ ...form, ...patch });

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (form.minXp.trim() !== '' && !XP.test(form.minXp.trim())) errs.minXp = 'A whole number of 0 or more';
    if (form.maxXp.trim() !== '' && !XP.test(form.maxXp.trim())) errs.maxXp = 'A whole number of 0 or more';
    if (!errs.minXp && !errs.maxXp && form.minXp.trim() !== '' && form.maxXp.trim() !== '' && Number(form.minXp) > Number(form.maxXp)) {
      errs.maxXp = 'At least the minimum';
    }
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    const query: UserQuery = {
      q: form.q.trim() || undefined,
      domains: form.domains.trim() || undefined,
      platforms: form.platforms.trim() || undefined,
      languages: form.languages.trim() || undefined,
      minXp: form.minXp.trim() === '' ? undefined : Number(form.minXp),
      maxXp: form.maxXp.trim() === '' ? undefined : Number(form.maxXp),
      live: form.liveOnly ? true : undefined,
    };
    void submit.run(async () => {
      const res = await users.search(query);
      setResult({ users: res.users, total: res.total ?? res.users.length, degraded: res.degraded === true });
    });
  };

  return (
    <section>
      <PageHeader title="Users" subtitle="Search people by name, wallet, skills and XP; see who is live now." />
      <p className="page-intro" data-testid="users-intro">
        The people this Splitline server knows, each identified by a wallet: profiles a superadmin imported from another
        system (<code>POST /api/admin/users</code>) or that a signed-in wallet saved for itself (<code>PUT /api/users/me</code>),
        with a display name, XP and skills. Someone is <em>live</em> while their app sends a presence heartbeat (at least
        every 2 minutes) and their space is public; nothing here comes from your receipts or payments. The directory is
        open to superadmins and to API keys a superadmin granted the <code>users:read</code> scope; a user whose space is
        not public shows only the day they were last seen.
      </p>
      <div className="split-layout split-layout-wide">
        <div>
          <form className="card form" onSubmit={onSubmit} noValidate>
            <div className="grid-2">
              <Field label="Name or wallet">{(id) => <input id={id} name="q" type="search" value={form.q} onChange={(e) => set({ q: e.target.value })} />}</Field>
              <Field label="Domains" hint="Comma-separated; all must match">{(id) => <input id={id} name="domains" value={form.domains} onChange={(e) => set({ domains: e.target.value })} />}</Field>
              <Field label="Platforms">{(id) => <input id={id} name="platforms" value={form.platforms} onChange={(e) => set({ platforms: e.target.value })} />}</Field>
              <Field label="Languages">{(id) => <input id={id} name="languages" value={form.languages} onChange={(e) => set({ languages: e.target.value })} />}</Field>
              <Field label="Min XP" error={errors.minXp}>{(id, invalid) => <input id={id} name="minXp" inputMode="numeric" value={form.minXp} aria-invalid={invalid} onChange={(e) => set({ minXp: e.target.value })} />}</Field>
              <Field label="Max XP" error={errors.maxXp}>{(id, invalid) => <input id={id} name="maxXp" inputMode="numeric" value={form.maxXp} aria-invalid={invalid} onChange={(e) => set({ maxXp: e.target.value })} />}</Field>
            </div>
            <Check label="Only users live now" checked={form.liveOnly} onChange={(liveOnly) => set({ liveOnly })} />
            <ErrorNote message={submit.error} />
            <FormActions>
              <Button type="submit" variant="primary" busy={submit.busy} busyLabel="Searching…">
                Search
              </Button>
            </FormActions>
          </form>
          {result !== null && (
            <>
              {result.degraded && <Notice kind="warn">The database is unavailable; no results could be read.</Notice>}
              <p className="muted small" data-testid="user-count">
                {result.users.length} shown of {result.total} matching
              </p>
              <Table columns={USER_COLUMNS} rows={result.users} rowKey={(u) => u.wallet} rowData={() => ({ 'data-testid': 'user-row' })} empty="Nobody matches." />
            </>
          )}
        </div>
        <aside className="card">
          <SectionHead title="Live now">
            <Button size="small" onClick={live.reload}>
              Refresh
            </Button>
          </SectionHead>
          <ErrorNote message={live.error} />
          {live.loading && live.data === null ? (
            <Loading />
          ) : (live.data?.live ?? []).length === 0 ? (
            <Empty>Nobody is live right now.</Empty>
          ) : (
            <ul className="live-list" data-testid="live-list">
              {(live.data?.live ?? []).map((u) => (
                <li key={u.wallet}>
                  <span className="live-dot" aria-hidden="true" />
                  <div>
                    <strong>{u.displayName || shortAddress(u.wallet)}</strong>
                    <div className="muted small">
                      {u.platform ?? 'live'}
                      {u.liveSince !== null && ` · since ${new Date(u.liveSince).toLocaleTimeString()}`}
                    </div>
                    {u.spaceUrl !== null && /^https?:\/\//.test(u.spaceUrl) && (
                      <a href={u.spaceUrl} target="_blank" rel="noopener noreferrer" className="small">
                        Open space
                      </a>
                    )}
                  </div>
                </li>
              ))}
            </ul>
          )}
        </aside>
      </div>
    </section>
  );
}
