/**
 * A tiny element builder. Text always goes in as text nodes (never HTML), so job names, log lines and
 * error messages cannot inject markup.
 *
 * @example
 * h('button', { type: 'button', onclick: () => cancel(), 'aria-label': 'Cancel job x' }, 'Cancel')
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name === 'value' || name === 'checked' || name === 'selected') el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children: nodes, strings (as text), arrays of those; skips null/undefined/false. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces an element's content. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A table cell that carries its column name, which the phone layout shows as a label. */
export function cell(label, ...children) {
  return h('td', { 'data-label': label }, ...children);
}

/** A message region for errors; screen readers announce it when it changes. */
export function alertBox() {
  return h('p', { class: 'alert', role: 'alert', hidden: true });
}

/** Shows `message` in an alert box made by {@link alertBox}, or hides it when empty. */
export function showAlert(box, message) {
  box.textContent = message ?? '';
  box.hidden = !message;
}
