// Sends UI events of [data-el] elements to the site server, then shows the new state in
// place: the server's answer carries the new state's page, whose <head> and <body> are
// swapped in, and the page's address becomes "<route>?v=<seq>", so no reload happens
// between two steps. The address is `__fsm.address`, and the browser's URL too (with
// history.replaceState) unless the harness turned that off (`setAddressing(false)`): each
// replaceState is a same-document navigation that costs the browser about 10 ms of its
// main thread, and the harness reports the address itself. Requests go to the session of
// the address, so the browser's URL may name another session (a kept page's first).
// Prefetch (off until `__fsm.setPrefetch(true)`; FSMTask(prefetch=True) turns it on): once
// idle, the page asks the server (POST ./next) for the pages its events
// lead to (clicks, options, checkboxes: every event whose value is known in advance). Such
// an event then swaps its page in at once, inside the event's handler, and is posted with
// that page's digest (`expect`); the answer confirms it (no html) or carries the page to
// show instead, so once `idle` settles the page shows what the server decided either way.
// URLs: the page lives under /s/<session>/ and posts to /s/<session>/event; the path after
// the session is the page's route (its body's data-route, e.g. pets/rex), shown as the
// address, so the HTML is the same for every session. Every handler is
// delegated to `document`, so a swapped-in body needs no new script run.
//
// window.__fsm, read by the harness:
//   pending   an event or a swap is in flight or queued
//   idle      a promise that settles when every queued one is done
//   swapped   the DOM shown was swapped in (false right after a full page load)
//   painted   the document has rendered a frame since it loaded (two frames went by)
//   address   the URL of the page shown: its session, route and ?v=<seq> (or the marker of
//             the URL it was shown as); the browser's URL too while addressing is on
//   setAddressing(on)  whether a page swapped in also becomes the browser's URL (on after
//             a full load, which always does)
//   digest    the server's digest of the page shown, when an answer told it (else null): an
//             event names it (`shown`) so that the answer may carry the new page's body only
//   next      the prefetched pages of the page shown ({seq, events, pages, parts}), or null
//   setPrefetch(on)  turn the prefetch on (asking at once when idle) or off; a full load
//             starts with it off
//   speculating  {digest, seq} while a prefetched page is shown and its event, the only
//             one, is in flight: the page's digest and the seq its event will have if the
//             server takes it (the URL says ?v=<seq> only once the answer came), else null
//   last      the last event's timings (ms) from the event on: {local, swap (the prefetched
//             page shown), answer (the answer came), shown (its page swapped in)} and whether
//             the answer carried the body only (bodyOnly), for benchmarks and tests
//   handOver(on)  let the harness take the page's events (see post below); off after a full load
//   outbox    the events waiting for the harness, [{id, session, body}] (body: what POST ./event takes)
//   receive(id, answer)  the answer to the outbox's event `id` (what POST ./event answers)
//   settled() a promise that settles like `idle`, or once an event waits in the outbox
//   show(url[, html])  swap in the page at url (fetched unless its html is given; resolves
//             to true), falling back to a full load if that fails; the harness uses it
//             after a jump, and the sandbox (as __softNavigate) for a new episode
(function () {
  if (window.__fsm) return;  // a swapped-in body's copy of this script never runs, but be sure
  var fsm = window.__fsm = {
    pending: false, idle: Promise.resolve(true), swapped: false, painted: false, digest: null,
    page: document.body.getAttribute("data-page"), next: null, last: null, speculating: null,
  };
  var shownCount = 0;  // pages swapped in so far: a prefetch answer is for the one it asked about
  window.__softNavigate = function (url, html) { return fsm.show(url, html); };
  fsm.send = function (el, event, value) { send(el, event, value); };  // for value_widgets.js
  // Two frames after the load the document has painted (the harness need not wait for it).
  requestAnimationFrame(function () { requestAnimationFrame(function () { fsm.painted = true; }); });
  var addressing = true;
  fsm.setAddressing = function (on) { addressing = !!on; return addressing; };
  // The address of the page shown, and the browser's URL while addressing is on.
  function setAddress(address) {
    fsm.address = absolute(address);
    if (addressing) history.replaceState(null, "", address);
  }
  // A URL relative to the page's address (not the browser's URL, which may lag behind).
  function absolute(url) { return new URL(url, fsm.address).href; }
  // A full load shows the route of its page too (the server serves every route of a session).
  fsm.address = location.href;
  if (document.body.hasAttribute("data-route")) setAddress(shown(location.href, document.body));

  // Another layout seed changes the theme's <style>; patch only what differs, so the big
  // shared stylesheet is not parsed again.
  function swapHead(head) {
    var old = document.head.children, now = head.children;
    if (old.length !== now.length) { document.head.replaceWith(head); return; }
    for (var i = 0; i < now.length; i++) {
      if (old[i].tagName !== now[i].tagName) { document.head.replaceWith(head); return; }
    }
    for (var j = 0; j < now.length; j++) {
      if (old[j].outerHTML !== now[j].outerHTML) old[j].replaceWith(document.importNode(now[j], true));
    }
  }

  // The session's base path (/s/<id>/) of a path, and the URL a page shows: that base, the
  // page's route and the query of `url` (its ?v= marker).
  function baseOf(path) {
    var m = path.match(/^\/s\/[^\/]+\//);
    return m ? m[0] : "./";
  }
  function shown(url, body) {
    var target = new URL(absolute(url));
    var route = (body.getAttribute("data-route") || "/").replace(/^\//, "");
    return baseOf(target.pathname) + route + target.search;
  }
  function here(suffix) { return baseOf(new URL(fsm.address).pathname) + suffix; }

  // `html`: a whole page; with `bodyOnly`, the <title> and <body ...> of a page whose head
  // (but for the title) and closing script are those of the page shown (an event's answer
  // `body`, see fsm_sites.server), so the page keeps its own head, sets the title, and moves
  // its script (run once already) into the new body.
  function swap(html, url, bodyOnly) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    if (!doc.body || !doc.body.hasAttribute("data-page")) throw new Error("not an FSM page: " + url);
    var body = doc.body, address = shown(url, body), script = document.body.lastElementChild;
    if (bodyOnly && (!script || script.tagName !== "SCRIPT")) throw new Error("no script to keep: " + url);
    var scrolled = window.scrollX !== 0 || window.scrollY !== 0;
    if (bodyOnly) body.appendChild(script);
    else swapHead(doc.head);
    if (document.title !== doc.title) document.title = doc.title;
    document.body.replaceWith(body);
    setAddress(address);
    // Scrolling lays the page out at once; unscrolled, the next frame does it.
    if (scrolled) window.scrollTo(0, 0);
    fsm.page = document.body.getAttribute("data-page");
    fsm.swapped = true;
    fsm.next = null;
    fsm.digest = null;
    shownCount += 1;
  }

  // A prefetched page whole again: the stylesheets and scripts every page holds come once,
  // in `parts`, and a page names part i as "\u0000i\u0000" (fsm_sites.server.pack_pages).
  function unpacked(next, digest) {
    var html = next.pages[digest];
    for (var i = 0; i < next.parts.length; i++) html = html.split("\u0000" + i + "\u0000").join(next.parts[i]);
    return html;
  }

  // Ask for the pages the shown page's events lead to; an answer that comes after another
  // swap is dropped (the event's answer checks every prefetched page anyway).
  var prefetching = false;
  fsm.setPrefetch = function (on) {
    var was = prefetching;
    prefetching = !!on;
    if (!prefetching) fsm.next = null;
    else if (!was && !fsm.pending && fsm.next === null) prefetch();  // on already: asked at idle
    return prefetching;
  };
  function prefetch() {
    if (!prefetching) return;
    var asked = shownCount;
    fetch(here("next"), { method: "POST" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (prefetching && d && d.events && d.parts && asked === shownCount && !fsm.pending) fsm.next = d;
      }, function () {});
  }

  // Queue one operation behind the others: `pending` until the last queued one settles,
  // and `idle` settles with it.
  var queued = 0;
  function track(operation) {
    queued += 1;
    fsm.pending = true;
    fsm.idle = fsm.idle.then(operation).then(function () {
      queued -= 1;
      if (queued === 0) {
        fsm.pending = false;
        if (fsm.next === null) prefetch();
      }
      return true;
    });
    return fsm.idle;
  }

  function load(url) {
    url = absolute(url);
    return fetch(url, { cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status + " for " + url);
        return r.text();
      })
      .then(function (html) { swap(html, url); })
      .catch(function () {
        location.replace(url);  // the document goes away; this promise never settles
        return new Promise(function () {});
      });
  }

  // Swap in html we already have (the page of `digest`, when known); if it is no FSM page,
  // fetch url (and then reload).
  function showHtml(html, url, digest, bodyOnly) {
    try { swap(html, url, bodyOnly); } catch (err) { return load(url); }
    fsm.digest = digest || null;
  }

  fsm.show = function (url, html) {
    return track(function () {
      return typeof html === "string" ? showHtml(html, url) : load(url);
    });
  };

  // An event that comes while another is in flight (a click right after typing: the
  // field's `change` goes first) waits its turn. It names the page it was sent from, so
  // if an earlier event left that page the server refuses it (409), and the page then
  // shows the current state like after any refused event. An event with a prefetched page
  // (none can be in flight then) shows it at once and names its digest in `expect`.
  function send(el, event, value) {
    var message = { page: fsm.page, element: el, event: event, value: value };
    var started = performance.now(), local = false, next = fsm.pending ? null : fsm.next;
    var digest = next ? next.events[JSON.stringify([el, event, value])] : undefined;
    fsm.speculating = null;
    if (digest !== undefined) {
      try {
        swap(unpacked(next, digest), fsm.address);
        fsm.digest = digest;
        message.expect = digest;
        fsm.speculating = { digest: digest, seq: next.seq + 1 };
        local = true;
      } catch (err) { /* not a page after all: the answer carries the right one */ }
    }
    var shownAt = performance.now();
    track(function () {
      if (fsm.digest) message.shown = fsm.digest;  // what the page shows when the event leaves
      return post(JSON.stringify(message))
        .then(function (d) {
          fsm.last = { local: local, swap: shownAt - started, answer: performance.now() - started };
          return released().then(function () { return answered(d); });
        }, function () { fsm.speculating = null; return released().then(function () { return load(here("?v=x")); }); });
    });
    function answered(d) {
      fsm.speculating = null;
      if (d.seq === undefined) return load(here("?v=x"));
      // The answer carries the new state's page unless the page shows it already.
      if (typeof d.html === "string" || typeof d.body === "string") {
        var bodyOnly = typeof d.html !== "string";
        var result = showHtml(bodyOnly ? d.body : d.html, here("?v=" + d.seq), d.digest, bodyOnly);
        fsm.last.shown = performance.now() - started;
        fsm.last.bodyOnly = bodyOnly;
        return result;
      }
      if (!local) return load(here("?v=x"));
      setAddress(shown(here("?v=" + d.seq), document.body));
    }
  }

  // A page swapped in while a pointer is pressed would take away the element it was
  // pressed on, and the click would be lost: a click right after typing presses, which
  // blurs the field, whose text is sent, and that answer may come before the release. So an
  // answer waits until the pointer is up and the click it fires has been handled (the
  // click's own event is then queued behind it); a press that fires no click (a drag)
  // releases in a task after the pointerup.
  var pressed = false, waiting = [];
  function release() {
    if (!pressed) return;
    pressed = false;
    waiting.splice(0).forEach(function (resolve) { resolve(true); });
  }
  function released() {
    return pressed ? new Promise(function (resolve) { waiting.push(resolve); }) : Promise.resolve(true);
  }
  document.addEventListener("pointerdown", function () { pressed = true; }, true);
  document.addEventListener("pointerup", function () { setTimeout(release, 0); }, true);
  document.addEventListener("pointercancel", release, true);

  // How an event reaches the server: POST ./event, unless the harness that drives this page
  // serves its session in its own process and takes the events itself (fsm.handOver(true)):
  // then an event waits in `outbox` until the harness reads it (with the action's own last
  // round trip), applies it as POST ./event would and hands the page the answer with
  // fsm.receive(id, answer); no request goes through the browser's network stack.
  var replies = {}, posted = 0, handingOver = false, outbox = [], wakers = [];
  fsm.outbox = outbox;
  fsm.handOver = function (on) { handingOver = !!on; return handingOver; };
  function post(body) {
    var session = new URL(fsm.address).pathname.match(/^\/s\/([^\/]+)\//);
    if (!handingOver || !session) {
      return fetch(here("event"), { method: "POST", headers: { "content-type": "application/json" }, body: body })
        .then(function (r) { return r.json(); });
    }
    return new Promise(function (resolve) {
      posted += 1;
      replies[posted] = resolve;
      outbox.push({ id: posted, session: decodeURIComponent(session[1]), body: body });
      wakers.splice(0).forEach(function (wake) { wake(true); });
    });
  }
  fsm.receive = function (id, answer) {
    for (var i = outbox.length - 1; i >= 0; i--) if (outbox[i].id === id) outbox.splice(i, 1);
    var resolve = replies[id];
    delete replies[id];
    if (resolve) resolve(answer);
    return true;
  };
  // Settles like `idle`, or as soon as an event waits in the outbox (it waits for the harness).
  fsm.settled = function () {
    if (outbox.length) return Promise.resolve(true);
    return new Promise(function (resolve) { wakers.push(resolve); fsm.idle.then(resolve); });
  };

  function closeMenus(except) {
    document.querySelectorAll(".dd-menu").forEach(function (m) { if (m !== except) m.hidden = true; });
  }
  document.addEventListener("click", function (e) {
    var option = e.target.closest(".dd-option");
    if (option) {
      e.preventDefault();
      send(option.closest("[data-el]").getAttribute("data-el"), "select", option.getAttribute("data-value"));
      return;
    }
    var toggle = e.target.closest(".dd-toggle");
    if (toggle) {
      e.preventDefault();
      var menu = toggle.parentNode.querySelector(".dd-menu");
      closeMenus(menu);
      menu.hidden = !menu.hidden;
      return;
    }
    closeMenus(null);
    // The clicked thing may be an option of a radio group: its value rides along.
    var el = e.target.closest("[data-ev='click']");
    if (el) {
      e.preventDefault();
      send(el.closest("[data-el]").getAttribute("data-el"), "click", el.getAttribute("data-value"));
      return;
    }
    if (e.target.closest("a[href='#']")) e.preventDefault();
  });
  // Enter sends a field's text, and Chromium then fires `change` for the same text: the
  // value each field last sent keeps that from queueing a second event.
  var sentText = new WeakMap();
  function sendText(field) {
    sentText.set(field, field.value);
    send(field.getAttribute("data-el"), "input", field.value);
  }
  document.addEventListener("change", function (e) {
    var t = e.target;
    var holder = t.closest("[data-el]");
    if (!holder) return;
    var kind = holder.getAttribute("data-kind");
    if (kind === "checkbox") send(holder.getAttribute("data-el"), t.checked ? "check" : "uncheck", null);
    else if (kind === "text_input" && sentText.get(t) !== t.value) sendText(t);
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.key === "Enter" && t.getAttribute && t.getAttribute("data-kind") === "text_input") {
      e.preventDefault();
      sendText(t);
    }
  });

  // Widgets (render/widgets.py). A combobox's field sends its text like a text input
  // (Enter, or `change`), as the combobox's event; typing filters its suggestions in the
  // page (no event); a suggestion's click sends `select` (its mousedown keeps the field
  // focused, so the list stays shown). A tooltip sends `hover` when the pointer moves
  // onto it while it is closed, `close` from its close button; Escape sends `close` to
  // every open menu and tooltip. Hover follows real pointer moves only (a pointermove at
  // new coordinates), so a page swapped in under a resting pointer sends nothing.
  function comboOf(t) {
    var holder = t && t.closest ? t.closest("[data-kind='combobox']") : null;
    return holder && t.tagName === "INPUT" ? holder : null;
  }
  function sendCombo(field, holder) {
    sentText.set(field, field.value);
    send(holder.getAttribute("data-el"), "input", field.value);
  }
  document.addEventListener("change", function (e) {
    var holder = comboOf(e.target);
    if (holder && sentText.get(e.target) !== e.target.value) sendCombo(e.target, holder);
  });
  document.addEventListener("keydown", function (e) {
    var holder = comboOf(e.target);
    if (holder && e.key === "Enter") {
      e.preventDefault();
      sendCombo(e.target, holder);
    } else if (e.key === "Escape") {
      document.querySelectorAll("[data-kind='menu'][data-open='true'], [data-kind='tooltip'][data-open='true']")
        .forEach(function (w) { send(w.getAttribute("data-el"), "close", null); });
    }
  });
  document.addEventListener("input", function (e) {
    var holder = comboOf(e.target);
    if (!holder) return;
    var typed = e.target.value.trim().toLowerCase();
    holder.querySelectorAll(".combo-option").forEach(function (o) {
      o.hidden = typed.length > 0 && o.textContent.toLowerCase().indexOf(typed) < 0;
    });
  });
  document.addEventListener("mousedown", function (e) {
    if (e.target.closest && e.target.closest(".combo-option")) e.preventDefault();
  });
  document.addEventListener("click", function (e) {
    var option = e.target.closest(".combo-option");
    var close = e.target.closest(".tip-close");
    if (!option && !close) return;
    e.preventDefault();
    e.stopPropagation();
    var holder = e.target.closest("[data-el]");
    if (option) send(holder.getAttribute("data-el"), "select", option.getAttribute("data-value"));
    else send(holder.getAttribute("data-el"), "close", null);
  }, true);
  var lastPointer = null;
  document.addEventListener("pointermove", function (e) {
    var at = e.clientX + "," + e.clientY;
    if (at === lastPointer) return;
    lastPointer = at;
    var tip = e.target.closest && e.target.closest(".tip-trigger");
    var host = tip && tip.closest("[data-kind='tooltip']");
    if (host && host.getAttribute("data-open") !== "true" && !host.hasAttribute("data-asked")) {
      host.setAttribute("data-asked", "");
      send(host.getAttribute("data-el"), "hover", null);
    }
  });
  // Registered last: runs after the click's own handlers above have sent its event.
  document.addEventListener("click", release);
})();
