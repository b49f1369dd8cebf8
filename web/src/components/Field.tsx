/** Form fields: a labelled control with its hint or error, a checkbox, a group of them, the form's buttons. */
import { useId, type ReactNode } from 'react';
import './field.css';

/** A labelled form control; `error` is shown under it and marks the control invalid. */
export function Field(props: { label: string; hint?: ReactNode; error?: string | null; children: (id: string, invalid: boolean) => ReactNode }) {
  const id = useId();
  const invalid = props.error !== undefined && props.error !== null;
  return (
    <div className={`field${invalid ? ' field-invalid' : ''}`}>
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, invalid)}
      {invalid ? <FieldError>{props.error}</FieldError> : props.hint !== undefined && <span className="field-hint">{props.hint}</span>}
    </div>
  );
}

/** A value shown where a field would be, when it cannot be changed here. */
export function StaticField(props: { label: string; hint?: ReactNode; testId?: string; children: ReactNode }) {
  return (
    <div className="field" data-testid={props.testId}>
      <span className="field-label">{props.label}</span>
      {props.children}
      {props.hint !== undefined && <span className="field-hint">{props.hint}</span>}
    </div>
  );
}

/** What is wrong with a field, or a group of them; `alert` when it appears on its own, away from a field. */
export function FieldError(props: { alert?: boolean; children: ReactNode }) {
  return (
    <span className="field-error" role={props.alert ? 'alert' : undefined}>
      {props.children}
    </span>
  );
}

/** A checkbox with its label after it. */
export function Check(props: { label: ReactNode; checked: boolean; name?: string; onChange: (checked: boolean) => void }) {
  return (
    <label className="check">
      <input type="checkbox" name={props.name} checked={props.checked} onChange={(e) => props.onChange(e.target.checked)} /> {props.label}
    </label>
  );
}

/** Fields that belong together under one legend, with the group's own error. */
export function Fieldset(props: { legend: string; error?: string; children: ReactNode }) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {props.children}
      {props.error !== undefined && <FieldError>{props.error}</FieldError>}
    </fieldset>
  );
}

/** A form's buttons, at its end. */
export function FormActions(props: { children: ReactNode }) {
  return <div className="form-actions">{props.children}</div>;
}
