// What the management views' forms share: the API's validation errors
// shown on the field they are about, and a submit handler that shows
// every other failure beside the form.
import {h, clear, errorBox, confirmAction} from './dom.js';

// clearInvalid takes the marks of a previous failure off inputs.
export function clearInvalid(inputs) {
  for (const input of Object.values(inputs)) {
    input.removeAttribute('aria-invalid');
    const note = document.getElementById(input.id + '-error');
    if (note) note.remove();
  }
}

// markInvalid shows err beside the input it is about: err.field names it
// ("schema/properties/total/type" is about the input named schema) and
// inputs maps field names to inputs; for a route whose errors name no
// field, byCode maps error codes to field names. It returns false when
// err is about none of them, for the caller to show it elsewhere.
export function markInvalid(inputs, err, byCode) {
  const name = (err && err.field || '').split('/')[0] || (byCode || {})[err && err.code] || '';
  const input = inputs[name];
  if (!input) return false;
  input.setAttribute('aria-invalid', 'true');
  const note = h('p', {class: 'field-error', id: input.id + '-error', role: 'alert'}, err.message);
  input.setAttribute('aria-describedby', note.id);
  input.after(note);
  input.focus();
  return true;
}

// onSubmit runs act(form) when form is submitted, with its submit button
// disabled meanwhile; a failure is shown on its field (inputs) or, when
// it names none, in out. byCode is markInvalid's.
export function onSubmit(form, inputs, out, act, byCode) {
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    clearInvalid(inputs);
    clear(out);
    try {
      await act();
    } catch (e) {
      if (!markInvalid(inputs, e, byCode)) clear(out, errorBox(e));
    } finally {
      button.disabled = false;
    }
  });
}

// confirmedButton is a button that asks question (confirmLabel says yes)
// and, once confirmed, runs act with the button disabled; a failure is
// shown in out and the button is usable again. attrs are the button's.
export function confirmedButton(label, attrs, question, confirmLabel, act, out) {
  const button = h('button', Object.assign({type: 'button'}, attrs), label);
  button.addEventListener('click', async () => {
    if (!await confirmAction(question, confirmLabel)) return;
    button.disabled = true;
    try {
      await act();
    } catch (e) {
      clear(out, errorBox(e));
      button.disabled = false;
    }
  });
  return button;
}
