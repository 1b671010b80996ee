(floor) => {
  // hands' page outline (crates/preview/src/outline.rs): roles, names, values and states of what
  // is rendered, as [depth, role, name, ref, value, states, level] records.
  let S = window.__handsOutline;
  if (!S) {
    S = { ids: new WeakMap(), els: new Map(), next: 1 };
    Object.defineProperty(window, "__handsOutline", { value: S, enumerable: false });
  }
  S.next = Math.max(S.next, floor);
  const els = new Map();
  const active = document.activeElement;
  const out = [];
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE"]);
  const LEAF = new Set(["textbox", "searchbox", "checkbox", "radio", "slider", "spinbutton",
    "img", "progressbar", "meter", "separator", "switch", "iframe"]);
  // Roles that get a ref: what can be clicked, typed into or chosen, and the containers worth
  // narrowing a snapshot to.
  const REF = new Set(["button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox",
    "listbox", "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider",
    "spinbutton", "treeitem", "form", "list", "table", "dialog", "alertdialog", "navigation"]);
  const FROM_CONTENT = new Set(["button", "link", "heading", "option", "tab", "menuitem",
    "menuitemcheckbox", "menuitemradio", "treeitem", "cell", "columnheader", "rowheader",
    "checkbox", "radio", "switch", "tooltip", "term", "caption", "legend"]);
  const INLINE = new Set(["inline", "inline-block", "inline-flex", "inline-grid", "contents", "ruby"]);
  const FORM = new Set(["INPUT", "SELECT", "TEXTAREA", "BUTTON", "FIELDSET", "OPTION", "OPTGROUP"]);
  const attr = (el, n) => el.getAttribute(n);
  const style = (el) => getComputedStyle(el);
  const hidden = (el, st) => st.display === "none" || attr(el, "aria-hidden") === "true";
  const squash = (s) => s.replace(/\s+/g, " ").trim();

  function landmark(el, role) {
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (["ARTICLE", "ASIDE", "MAIN", "NAV", "SECTION"].includes(p.tagName)) return null;
    }
    return role;
  }

  function roleOf(el) {
    const explicit = (attr(el, "role") || "").trim().split(/\s+/)[0].toLowerCase();
    if (explicit) return explicit;
    const tag = el.tagName;
    switch (tag) {
      case "A": case "AREA": return el.hasAttribute("href") ? "link" : null;
      case "BUTTON": return "button";
      case "INPUT": {
        const t = (el.type || "text").toLowerCase();
        if (t === "hidden") return null;
        if (t === "checkbox" || t === "radio") return t;
        if (t === "range") return "slider";
        if (t === "number") return "spinbutton";
        if (t === "search") return "searchbox";
        if (["button", "submit", "reset", "image", "file", "color"].includes(t)) return "button";
        return "textbox";
      }
      case "SELECT": return el.multiple || el.size > 1 ? "listbox" : "combobox";
      case "OPTION": return "option";
      case "OPTGROUP": return "group";
      case "TEXTAREA": return "textbox";
      case "H1": case "H2": case "H3": case "H4": case "H5": case "H6": return "heading";
      case "UL": case "OL": case "MENU": return "list";
      case "LI": return "listitem";
      case "DT": return "term";
      case "DD": return "definition";
      case "NAV": return "navigation";
      case "MAIN": return "main";
      case "HEADER": return landmark(el, "banner");
      case "FOOTER": return landmark(el, "contentinfo");
      case "ASIDE": return "complementary";
      case "SECTION": return attr(el, "aria-label") || attr(el, "aria-labelledby") ? "region" : null;
      case "ARTICLE": return "article";
      case "FORM": return "form";
      case "SEARCH": return "search";
      case "TABLE": return "table";
      case "TR": return "row";
      case "TD": return "cell";
      case "TH": return attr(el, "scope") === "row" ? "rowheader" : "columnheader";
      case "DIALOG": return "dialog";
      case "P": return "paragraph";
      case "BLOCKQUOTE": return "blockquote";
      case "IMG": return attr(el, "alt") === "" ? null : "img";
      case "svg": return attr(el, "aria-label") || attr(el, "aria-labelledby") ? "img" : null;
      case "HR": return "separator";
      case "PROGRESS": return "progressbar";
      case "METER": return "meter";
      case "OUTPUT": return "status";
      case "FIELDSET": case "DETAILS": return "group";
      case "SUMMARY": return "button";
      case "IFRAME": return "iframe";
      default: return null;
    }
  }

  // The text of el's content, as a name from content reads it (skip: the control being named).
  function textOf(el, skip, depth) {
    if (depth > 20) return "";
    let s = "";
    for (const c of el.childNodes) {
      if (c.nodeType === 3) { s += c.data; continue; }
      if (c.nodeType !== 1 || c === skip || SKIP.has(c.tagName)) continue;
      const st = style(c);
      if (hidden(c, st)) continue;
      const label = attr(c, "aria-label");
      let part;
      if (label && label.trim()) part = label;
      else if (c.tagName === "IMG") part = attr(c, "alt") || "";
      else if (["INPUT", "SELECT", "TEXTAREA"].includes(c.tagName)) part = "";
      else part = textOf(c, skip, depth + 1);
      s += INLINE.has(st.display) ? part : " " + part + " ";
    }
    return s;
  }

  function byIds(ids) {
    return squash(ids.split(/\s+/).map((id) => document.getElementById(id))
      .filter(Boolean).map((e) => attr(e, "aria-label") || textOf(e, null, 0)).join(" "));
  }

  function nameOf(el, role) {
    const by = attr(el, "aria-labelledby");
    if (by) { const n = byIds(by); if (n) return n; }
    const label = attr(el, "aria-label");
    if (label && label.trim()) return squash(label);
    const tag = el.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") {
      const t = (el.type || "").toLowerCase();
      if (tag === "INPUT" && ["button", "submit", "reset"].includes(t)) {
        return el.value || (t === "submit" ? "Submit" : t === "reset" ? "Reset" : "");
      }
      if (tag === "INPUT" && t === "image") return attr(el, "alt") || el.value || "Submit";
      const labels = el.labels ? [...el.labels].map((l) => squash(textOf(l, el, 0))).filter(Boolean) : [];
      if (labels.length) return labels.join(" ");
      return squash(attr(el, "title") || attr(el, "placeholder") || "");
    }
    if (tag === "IMG" || tag === "AREA") return squash(attr(el, "alt") || attr(el, "title") || "");
    if (tag === "FIELDSET") { const l = el.querySelector(":scope > legend"); if (l) return squash(textOf(l, null, 0)); }
    if (tag === "TABLE") { const c = el.querySelector(":scope > caption"); if (c) return squash(textOf(c, null, 0)); }
    if (tag === "svg") { const t = el.querySelector(":scope > title"); if (t) return squash(t.textContent); }
    if (FROM_CONTENT.has(role)) { const n = squash(textOf(el, null, 0)); if (n) return n; }
    return squash(attr(el, "title") || "");
  }

  function flag(el, n) { const v = attr(el, n); return v !== null && v !== "false"; }

  function states(el, role) {
    const s = [];
    const tag = el.tagName;
    if (tag === "INPUT" && (el.type === "checkbox" || el.type === "radio")) {
      if (el.indeterminate) s.push("mixed"); else if (el.checked) s.push("checked");
    } else {
      const c = attr(el, "aria-checked");
      if (c === "true") s.push("checked"); else if (c === "mixed") s.push("mixed");
    }
    const p = attr(el, "aria-pressed");
    if (p === "true") s.push("pressed"); else if (p === "mixed") s.push("mixed");
    const control = FORM.has(tag);
    if ((control && el.matches(":disabled")) || attr(el, "aria-disabled") === "true") s.push("disabled");
    if (el === active && el !== document.body) s.push("focused");
    if (tag === "OPTION" ? el.selected : attr(el, "aria-selected") === "true") s.push("selected");
    if (el.required || attr(el, "aria-required") === "true") s.push("required");
    let invalid = flag(el, "aria-invalid");
    if (!invalid && (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA")) {
      try { invalid = el.matches(":user-invalid"); } catch (_) { /* an engine without it */ }
    }
    if (invalid) s.push("invalid");
    if ((el.readOnly && role === "textbox") || attr(el, "aria-readonly") === "true") s.push("readonly");
    if (attr(el, "aria-modal") === "true" || (tag === "DIALOG" && el.matches(":modal"))) s.push("modal");
    const x = attr(el, "aria-expanded");
    if (x === "true") s.push("expanded"); else if (x === "false") s.push("collapsed");
    else if (tag === "SUMMARY" && el.parentElement && el.parentElement.tagName === "DETAILS") {
      s.push(el.parentElement.open ? "expanded" : "collapsed");
    }
    return s.join(" ");
  }

  function valueOf(el, role) {
    const tag = el.tagName;
    if (tag === "INPUT") {
      const t = (el.type || "text").toLowerCase();
      if (["checkbox", "radio", "button", "submit", "reset", "image", "hidden"].includes(t)) return "";
      if (t === "file") return [...(el.files || [])].map((f) => f.name).join(", ");
      if (t === "password") return "•".repeat(el.value.length);
      return el.value;
    }
    if (tag === "TEXTAREA") return el.value;
    if (tag === "SELECT" && role === "combobox") {
      const o = el.selectedOptions && el.selectedOptions[0];
      return o ? squash(o.label || o.textContent) : "";
    }
    if (tag === "PROGRESS" || tag === "METER") return String(el.value);
    const text = attr(el, "aria-valuetext") || attr(el, "aria-valuenow");
    if (text) return text;
    if ((role === "textbox" || role === "searchbox") && el.isContentEditable) return squash(el.innerText || "");
    return "";
  }

  function level(el, role) {
    if (role !== "heading") return 0;
    const l = parseInt(attr(el, "aria-level") || "", 10);
    if (l > 0) return l;
    return /^H[1-6]$/.test(el.tagName) ? Number(el.tagName[1]) : 2;
  }

  function refOf(el) {
    let id = S.ids.get(el);
    if (!id) { id = S.next++; S.ids.set(el, id); }
    els.set(id, el);
    return id;
  }

  // Text gathered at one depth until something else is shown there.
  let text = "";
  let textDepth = 0;
  let textParent = "";
  function flush() {
    const t = squash(text);
    if (t && !textParent.includes(t)) out.push([textDepth, "text", t, 0, "", "", 0]);
    text = "";
  }

  function children(el) {
    if (el.tagName === "DETAILS" && !el.open) {
      // A closed disclosure shows its summary only.
      const summary = [...el.children].find((c) => c.tagName === "SUMMARY");
      return summary ? [summary] : [];
    }
    if (el.shadowRoot) return el.shadowRoot.childNodes;
    if (el.tagName === "SLOT") { const a = el.assignedNodes({ flatten: true }); if (a.length) return a; }
    return el.childNodes;
  }

  function walk(el, depth, parentName, visible) {
    for (const c of children(el)) {
      if (c.nodeType === 3) {
        if (visible) { if (textDepth !== depth || textParent !== parentName) flush(); textDepth = depth; textParent = parentName; text += c.data; }
        continue;
      }
      if (c.nodeType !== 1 || SKIP.has(c.tagName)) continue;
      if (c.tagName === "BR") { text += " "; continue; }
      const st = style(c);
      const display = st.display;
      if (display === "none" || attr(c, "aria-hidden") === "true") continue;
      const shown = st.visibility === "visible";
      const role = shown ? roleOf(c) : null;
      if (c.tagName === "svg" && !role) continue;
      const inline = INLINE.has(display);
      if (!role || role === "generic" || role === "none" || role === "presentation") {
        const name = role === "generic" ? nameOf(c, role) : "";
        if (!name) {
          if (!inline) flush();
          // A label's text repeats the name of the control it labels.
          const inner = c.tagName === "LABEL" && c.control ? nameOf(c.control, roleOf(c.control)) || parentName : parentName;
          if (inner !== parentName) flush();
          walk(c, depth, inner, shown);
          if (!inline || inner !== parentName) flush();
          continue;
        }
      }
      flush();
      const name = nameOf(c, role);
      const ref = REF.has(role) ? refOf(c) : 0;
      out.push([depth, role, name, ref, valueOf(c, role), states(c, role), level(c, role)]);
      if (c.tagName === "SELECT") {
        // A single choice's value is on its line already; a list box's choices are marked.
        const many = role === "listbox";
        for (const o of c.querySelectorAll("option")) {
          if (o.hidden) continue;
          const chosen = many && o.selected ? "selected" : "";
          out.push([depth + 1, "option", squash(o.label || o.textContent), 0, "", chosen, 0]);
        }
        continue;
      }
      if (LEAF.has(role)) continue;
      walk(c, depth + 1, name, shown);
      flush();
    }
  }

  if (document.body) walk(document.body, 0, "", true);
  flush();
  S.els = els;
  // One string: far cheaper to send back than as many small arrays by value.
  return JSON.stringify({ next: S.next, nodes: out });
}
