import { shortMessage } from '../lib/format.ts';
import './notice.css';

/** Longer than this, or on several lines, a message is cut to its first line and shown whole only when unfolded. */
const FOLD_OVER = 200;

/** A failure as one short sentence, and the rest (if any) for a folded "Details". */
export function foldMessage(message: string, detail: string | null = null): { summary: string; detail: string | null } {
  if (detail !== null && detail.trim() !== '') return { summary: message, detail };
  if (message.length <= FOLD_OVER && !/\n/.test(message.trim())) return { summary: message, detail: null };
  return { summary: shortMessage(message, 160), detail: message };
}

/**
 * The text of an error note: one sentence, then the details folded (<details>), wrapped so that
 * hex blobs and addresses never widen the page.
 */
export function ErrorText(props: { message: string; detail?: string | null }) {
  const { summary, detail } = foldMessage(props.message, props.detail ?? null);
  return (
    <>
      <span className="error-summary" data-testid="error-summary">
        {summary}
      </span>
      {detail !== null && (
        <details className="error-detail" data-testid="error-detail">
          <summary>Details</summary>
          <pre className="error-detail-text">{detail}</pre>
        </details>
      )}
    </>
  );
}
