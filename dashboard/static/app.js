// rota's dashboard: the little the pages need beyond HTML. Loaded from
// this site (the Content-Security-Policy allows no inline script).
"use strict";

// Times: each <time> shows a relative time; its title, the full time in
// the browser's own zone.
function localTimes(root) {
  const fmt = new Intl.DateTimeFormat(undefined, {year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"});
  for (const t of root.querySelectorAll("time[datetime]")) {
    const d = new Date(t.getAttribute("datetime"));
    if (isNaN(d)) continue;
    t.title = fmt.format(d) + " (" + t.title + ")";
    // A time of day, as the page's later changes show theirs.
    if (t.hasAttribute("data-clock")) t.textContent = d.toLocaleTimeString();
  }
}

// Forms that change something ask first.
document.addEventListener("submit", (e) => {
  const msg = e.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) e.preventDefault();
});

document.addEventListener("click", (e) => {
  const el = e.target;
  if (el.matches("[data-copy]")) {
    const src = document.getElementById(el.getAttribute("data-copy"));
    const text = src.value !== undefined ? src.value : src.textContent;
    navigator.clipboard.writeText(text).then(() => { el.textContent = "Copied"; setTimeout(() => { el.textContent = "Copy"; }, 1500); });
  }
  if (el.matches("[data-select-all]")) {
    for (const box of document.querySelectorAll("input[name=id]")) box.checked = el.checked;
  }
  if (el.matches("[data-back]")) { e.preventDefault(); history.back(); }
});

// "/" finds a job, as on many sites.
document.addEventListener("keydown", (e) => {
  if (e.key === "/" && !["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName)) {
    const f = document.getElementById("find");
    if (f) { e.preventDefault(); f.focus(); }
  }
});

// Live pages: the server says when jobs changed (Server-Sent Events), and
// the page fetches what it shows again; it never polls.
function live() {
  const box = document.querySelector("[data-live]");
  const history = document.getElementById("history");
  const bulk = document.querySelector("[data-running=yes]");
  if (!box && !history && !bulk) return;
  const es = new EventSource("/ui/stream");
  let busy = false, trailing = 0;
  es.addEventListener("changed", async () => {
    // Once more after the changes stop: the server reuses a count for two
    // seconds while jobs change.
    clearTimeout(trailing);
    trailing = setTimeout(() => es.dispatchEvent(new Event("settled")), 2500);
    refresh();
  });
  es.addEventListener("settled", () => refresh());
  // The session ended (signed out elsewhere, or its token revoked).
  es.addEventListener("signed-out", () => { es.close(); location.reload(); });
  async function refresh() {
    if (bulk) { location.reload(); return; }
    if (history) {
      const r = await fetch(location.pathname, {headers: {"Accept": "text/html"}});
      if (!r.ok) return;
      const doc = new DOMParser().parseFromString(await r.text(), "text/html");
      // The state and its marks (such as expired), and the facts, as the
      // page now has them.
      const st = doc.querySelector("h1"), now = document.querySelector("h1");
      const marks = h => Array.from(h.querySelectorAll(".st"), e => e.textContent).join(", ");
      if (st && now && marks(st) !== marks(now)) {
        const li = document.createElement("li");
        li.textContent = new Date().toLocaleTimeString() + ": " + marks(st) + ".";
        history.appendChild(li);
        now.replaceChildren(...st.childNodes);
        const facts = doc.querySelector("dl.facts"), shown = document.querySelector("dl.facts");
        if (facts && shown) shown.replaceChildren(...facts.childNodes);
      }
      return;
    }
    if (busy) return;
    busy = true;
    try {
      const r = await fetch(box.getAttribute("data-live"));
      if (r.status === 401) { location.reload(); return; }
      if (r.ok) {
        // The fragment is bare HTML, drawn by the same template as the page.
        const doc = new DOMParser().parseFromString(await r.text(), "text/html");
        box.replaceChildren(...doc.body.childNodes);
        localTimes(box);
        box.setAttribute("data-updated", String(Date.now()));
      }
    } finally {
      busy = false;
    }
  }
}

// A form's time zone: the browser's, for datetime-local inputs.
for (const tz of document.querySelectorAll("[data-tz]")) {
  tz.value = Intl.DateTimeFormat().resolvedOptions().timeZone;
}
localTimes(document);
live();
