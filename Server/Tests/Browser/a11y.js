// A small accessibility checker, run by Tests/Browser/run.py on every screen of the browser
// client (axe-core cannot be installed here). It installs `window.__a11y` with:
//
// - `problems()`: what is wrong on the screen as shown now: controls and fields without an
//   accessible name, images without alt text, dialogs without a name, positive tabindex,
//   duplicate ids, no live region for status, text below WCAG AA contrast (4.5:1; 3:1 for large
//   text) against what is behind it, and a page wider than the window (sideways scrolling).
// - `tabbables()`: the elements the Tab key should visit, in order (the test presses Tab and
//   compares), and `focusShown()`: whether the focused element draws a visible focus indicator.
//
// While a modal is open (a `<dialog>` shown modally, or an element with aria-modal="true"),
// only the modal is checked: the rest of the page is behind it and cannot be reached.
(() => {
  const INTERACTIVE = "button, a[href], input:not([type=hidden]), select, textarea, summary, [tabindex], [role=button]";

  function shown(element) {
    if (!element.isConnected || element.closest("[inert]")) return false;
    if (!element.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return false;
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  }

  /** The open modal, or the whole page. */
  function scope() {
    const modal = document.querySelector("dialog:modal")
      ?? [...document.querySelectorAll("[aria-modal=true]")].find((e) => !e.hidden && shown(e));
    return modal ?? document.body;
  }

  function describe(element) {
    const id = element.id ? `#${element.id}` : "";
    const classes = element.classList.length ? `.${[...element.classList].join(".")}` : "";
    const text = (element.innerText ?? "").trim().replace(/\s+/g, " ").slice(0, 30);
    return `${element.tagName.toLowerCase()}${id}${classes}${text ? ` "${text}"` : ""}`;
  }

  /** The accessible name, as browsers compute it for these cases. */
  function accessibleName(element) {
    const labelledBy = element.getAttribute("aria-labelledby");
    if (labelledBy) {
      return labelledBy.split(/\s+/).map((id) => document.getElementById(id)?.textContent ?? "").join(" ").trim();
    }
    const label = element.getAttribute("aria-label");
    if (label?.trim()) return label.trim();
    if (element.labels?.length) return [...element.labels].map((l) => l.textContent).join(" ").trim();
    if (["INPUT", "SELECT", "TEXTAREA"].includes(element.tagName)) return (element.getAttribute("title") ?? "").trim();
    const image = element.tagName === "IMG" ? element.getAttribute("alt") : null;
    if (image !== null) return image.trim();
    return (element.innerText ?? element.textContent ?? "").trim();
  }

  // MARK: contrast (WCAG 2.1 relative luminance)

  function parse(color) {
    const m = color.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r, g, b, a };
  }

  function over(top, bottom) {
    const a = top.a + bottom.a * (1 - top.a);
    if (a === 0) return { r: 0, g: 0, b: 0, a: 0 };
    const mix = (t, b) => (t * top.a + b * bottom.a * (1 - top.a)) / a;
    return { r: mix(top.r, bottom.r), g: mix(top.g, bottom.g), b: mix(top.b, bottom.b), a };
  }

  function luminance({ r, g, b }) {
    const channel = (v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  }

  function ratio(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  }

  /** What is painted behind `element`: its own and its ancestors' backgrounds, composited; an
   * open modal's backdrop counts for what is outside it. */
  function background(element) {
    const layers = [];
    for (let node = element; node && node.nodeType === 1; node = node.parentElement) {
      const color = parse(getComputedStyle(node).backgroundColor);
      if (color && color.a > 0) layers.push(color);
      if (color && color.a >= 1) break;
    }
    let result = { r: 255, g: 255, b: 255, a: 1 };
    for (const layer of layers.reverse()) result = over(layer, result);
    return result;
  }

  function opacity(element) {
    let value = 1;
    for (let node = element; node && node.nodeType === 1; node = node.parentElement) {
      value *= Number(getComputedStyle(node).opacity);
    }
    return value;
  }

  function contrastProblems(root) {
    const problems = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const seen = new Set();
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      const element = text.parentElement;
      if (!text.textContent.trim() || seen.has(element) || !shown(element)) continue;
      seen.add(element);
      if (element.closest("button:disabled, [aria-hidden=true]")) continue;
      const style = getComputedStyle(element);
      const back = background(element);
      let fore = parse(style.color);
      fore = over({ ...fore, a: fore.a * opacity(element) }, back);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      const needed = large ? 3 : 4.5;
      const found = ratio(fore, back);
      if (found < needed) problems.push(`contrast ${found.toFixed(2)} < ${needed}: ${describe(element)}`);
    }
    return problems;
  }

  // MARK: the checks

  function problems() {
    const root = scope();
    const found = [];
    for (const element of root.querySelectorAll(INTERACTIVE)) {
      if (!shown(element)) continue;
      if (!accessibleName(element)) found.push(`no accessible name: ${describe(element)}`);
      const index = Number(element.getAttribute("tabindex"));
      if (index > 0) found.push(`positive tabindex: ${describe(element)}`);
    }
    for (const element of root.querySelectorAll("img")) {
      if (shown(element) && element.getAttribute("alt") === null) found.push(`image without alt: ${describe(element)}`);
    }
    for (const element of root.querySelectorAll("[role=img]")) {
      if (shown(element) && !element.closest("[aria-hidden=true]") && !accessibleName(element)) {
        found.push(`role=img without a name: ${describe(element)}`);
      }
    }
    for (const element of document.querySelectorAll("dialog[open], [role=dialog], [role=alertdialog]")) {
      if (shown(element) && !accessibleName(element)) found.push(`dialog without a name: ${describe(element)}`);
    }
    const ids = [...document.querySelectorAll("[id]")].map((e) => e.id);
    for (const id of new Set(ids.filter((id, i) => ids.indexOf(id) !== i))) found.push(`duplicate id: ${id}`);
    if (!document.querySelector("[role=status], [role=alert], [aria-live]")) found.push("no live region for status");
    found.push(...contrastProblems(root));
    const width = document.documentElement.scrollWidth;
    if (width > window.innerWidth) found.push(`sideways scrolling: the page is ${width}px wide in ${window.innerWidth}px`);
    return found;
  }

  /** Elements Tab visits, in order: shown, enabled, not inert, tabindex not negative. */
  function tabbables() {
    return [...scope().querySelectorAll(INTERACTIVE)]
      .filter((e) => shown(e) && !e.disabled && e.tabIndex >= 0 && !e.closest("details:not([open]) > :not(summary)"))
      .filter((e) => !(e.tagName === "INPUT" && e.type === "radio" && !e.checked));
  }

  function focusShown() {
    const element = document.activeElement;
    if (!element || element === document.body) return false;
    const style = getComputedStyle(element);
    const outline = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2;
    return outline || style.boxShadow !== "none";
  }

  /** Puts the keyboard's starting point at the top of the screen (or of the open modal). */
  function focusStart() {
    const start = scope();
    const had = start.getAttribute("tabindex");
    start.tabIndex = -1;
    start.focus();
    if (had === null) start.removeAttribute("tabindex");
    else start.setAttribute("tabindex", had);
  }

  window.__a11y = { problems, tabbables, focusShown, describe, focusStart };
})();
